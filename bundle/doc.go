// Package bundle moves what a store holds to another store, or another
// server, whole. Export writes one JSONL file, a bundle, and Import
// recreates its contents exactly. A bundle holds sessions (with their
// logs), users' facts (with their histories: superseded facts, validity,
// record times, the audit log) and memory blocks (users' and sessions',
// with their versions and histories). It also holds the documents put
// into recall, but not those derived from sessions, which indexing the
// imported sessions makes again. It is what agentmem export and agentmem
// import run.
//
// A bundle of version 2 (Version) is a header line, then one line per
// record, each a JSON object with one key, the record's kind. An end line
// counts the records, so that a bundle cut short is refused:
//
//	{"agentmem_export":2,"bundle":{"exported_at":"...","all":true,"all_tenants":true}}
//	{"session":{"id":"s1","user_id":"alice","retention":"session",...,"last_seq":2}}
//	{"entry":{"seq":1,"kind":"step","time":"...","step":{"type":"task",...}}}
//	{"entry":{"seq":2,"kind":"step","time":"...","step":{"type":"final_answer",...}}}
//	{"block":{"owner":"session","owner_id":"s1","label":"task","value":"...","limit":5000,"version":3,...}}
//	{"change":{"version":2,"action":"appended","by":"agent","at":"...","before":"...","after":"..."}}
//	{"change":{"version":3,"action":"set","by":"api","at":"...","before":"...","after":"..."}}
//	{"facts":{"user_id":"alice"}}
//	{"fact":{"id":"...","text":"Lives in Paris.","confidence":0.7,...,"valid_from":"..."}}
//	{"audit":{"fact_id":"...","action":"added","at":"...","after":{...}}}
//	{"document":{"id":"note-1","text":"...","metadata":{"user":"alice"}}}
//	{"end":{"sessions":1,"entries":2,"blocks":1,"changes":2,"users":1,"facts":1,"audit":1,"documents":1}}
//
// A session's entries follow it, a block's changes follow the block, and
// a user's facts, then the user's audit entries, follow the user's facts
// line. The format's every field, and its version history, are in
// docs/bundle.md.
// Version 1 is a sequence of session exports (store.Export), one after
// another, which Import still reads.
package bundle
