package sqlitedb

// WatchGroup sets g's test hooks: queued is called with the number of
// writes pending once a write is queued, batch with each batch's size
// before it runs. Set them before g's first write.
func WatchGroup(g *Group, queued func(pending int), batch func(n int)) {
	g.testQueued, g.testBatch = queued, batch
}
