package tokenizer

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"io"
	"math/bits"
	"unsafe"
)

// vocab is the loaded, read-only vocabulary of an encoding: every token's
// bytes and a hash table from bytes to rank. The rank of a token is its ID.
type vocab struct {
	arena []byte // the bytes of every token, in file order
	spans []span // token ID (rank) -> its bytes in arena

	byteRank [256]uint32    // rank of each single byte (all are tokens)
	pairRank []uint32       // 2-byte string b0|b1<<8 -> rank+1, 0 if no token
	slots    []slot         // open addressing, linear probing
	shift    uint           // 64 - log2(len(slots))
	special  map[int]string // special token ID -> text, for Decode
	nRanks   int
	maxLen   int // the longest token, in bytes
}

type span struct{ off, n uint32 }

// slot is a token in the hash table. key holds its first 8 bytes (little
// endian, zero padded), and meta holds its rank+1 << 32 | its length. meta
// 0 is an empty slot.
type slot struct{ key, meta uint64 }

// noRank is the rank of a string that is no token.
const noRank = ^uint32(0)

// parseVocab reads a .tiktoken file from r (one "base64(token) rank" a
// line, as OpenAI publishes them). The file must hold exactly want ranks
// 0..want-1; fileSize sizes the token arena. It reads the file in small
// chunks rather than whole, since fresh memory is slow to fault in.
func parseVocab(r io.Reader, fileSize, want int, special map[string]int) (*vocab, error) {
	// Tokens take 0.39 of the file's bytes in both encodings.
	v := &vocab{nRanks: want, spans: make([]span, want), arena: make([]byte, 0, fileSize*2/5+64)}
	buf := make([]byte, 32<<10)
	line, n := 0, 0
	for {
		m, err := r.Read(buf[n:])
		n += m
		data := buf[:n]
		for {
			end := bytes.IndexByte(data, '\n')
			if end < 0 {
				break
			}
			line++
			if err := v.addLine(data[:end], line); err != nil {
				return nil, err
			}
			data = data[end+1:]
		}
		n = copy(buf, data)
		if err == io.EOF {
			if n > 0 {
				if err := v.addLine(buf[:n], line+1); err != nil {
					return nil, err
				}
			}
			break
		}
		if err != nil {
			return nil, err
		}
		if n == len(buf) {
			return nil, fmt.Errorf("line %d is too long", line+1)
		}
	}
	for r, sp := range v.spans {
		if sp.n == 0 {
			return nil, fmt.Errorf("has no rank %d", r)
		}
	}

	size := 1 << bits.Len(uint(2*want)) // load factor at most 1/2
	v.slots = make([]slot, size)
	adviseHugePages(v.slots)
	v.shift = uint(64 - bits.TrailingZeros(uint(size)))
	v.pairRank = make([]uint32, 1<<16)
	for r := range want {
		tok := v.token(r)
		if !v.insert(tok, uint32(r)) {
			return nil, fmt.Errorf("token %q has two ranks", tok)
		}
		switch len(tok) {
		case 1:
			v.byteRank[tok[0]] = uint32(r)
		case 2:
			v.pairRank[int(tok[0])|int(tok[1])<<8] = uint32(r) + 1
		}
	}
	// Every single byte must be a token, or a piece could fail to encode.
	for b := range 256 {
		if v.lookup(string([]byte{byte(b)})) == noRank {
			return nil, fmt.Errorf("has no token for byte %#x", b)
		}
	}
	v.special = make(map[int]string, len(special))
	for text, id := range special {
		if id < want {
			return nil, fmt.Errorf("special token %q has ID %d, which is taken", text, id)
		}
		v.special[id] = text
	}
	return v, nil
}

// addLine adds the token on line number line of the rank file.
func (v *vocab) addLine(l []byte, line int) error {
	if len(l) == 0 {
		return nil
	}
	sp := bytes.IndexByte(l, ' ')
	if sp <= 0 {
		return fmt.Errorf("line %d: want \"base64 rank\"", line)
	}
	rank, ok := atoi(l[sp+1:])
	if !ok || rank >= v.nRanks {
		return fmt.Errorf("line %d: rank %q is not in 0..%d", line, l[sp+1:], v.nRanks-1)
	}
	if v.spans[rank].n != 0 {
		return fmt.Errorf("line %d: rank %d is repeated", line, rank)
	}
	off := len(v.arena)
	v.arena = append(v.arena, make([]byte, base64.StdEncoding.DecodedLen(sp))...)
	n, err := base64.StdEncoding.Decode(v.arena[off:], l[:sp])
	if err != nil || n == 0 {
		return fmt.Errorf("line %d: bad token %q", line, l[:sp])
	}
	v.arena = v.arena[:off+n]
	v.spans[rank] = span{uint32(off), uint32(n)}
	v.maxLen = max(v.maxLen, n)
	return nil
}

// atoi parses a non-negative decimal number of at most 9 digits.
func atoi(b []byte) (int, bool) {
	if len(b) == 0 || len(b) > 9 {
		return 0, false
	}
	n := 0
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}

// token returns the bytes of the token with rank r (a valid rank).
func (v *vocab) token(r int) []byte {
	s := v.spans[r]
	return v.arena[s.off : s.off+s.n : s.off+s.n]
}

func (v *vocab) insert(tok []byte, rank uint32) bool {
	s := unsafe.String(unsafe.SliceData(tok), len(tok))
	key := pack(s)
	meta := uint64(rank+1)<<32 | uint64(len(tok))
	mask := len(v.slots) - 1
	for i := int(hash(s, key) >> v.shift); ; i = (i + 1) & mask {
		sl := &v.slots[i]
		if sl.meta == 0 {
			*sl = slot{key, meta}
			return true
		}
		if sl.key == key && uint32(sl.meta) == uint32(len(s)) && v.tail(sl) == s[min(8, len(s)):] {
			return false
		}
	}
}

// lookup returns the rank of s, or noRank if s is no token.
func (v *vocab) lookup(s string) uint32 {
	if len(s) > v.maxLen {
		return noRank
	}
	if len(s) == 2 {
		return v.pairRank[int(s[0])|int(s[1])<<8] - 1
	}
	key := pack(s)
	return v.lookupHashed(s, key, hash(s, key))
}

// lookupHashed is lookup with s's pack and hash already computed.
func (v *vocab) lookupHashed(s string, key, h uint64) uint32 {
	mask := len(v.slots) - 1
	n := uint64(len(s))
	for i := int(h >> v.shift); ; i = (i + 1) & mask {
		sl := &v.slots[i]
		if sl.meta == 0 {
			return noRank
		}
		if sl.key == key && uint32(sl.meta) == uint32(n) && (n <= 8 || v.tail(sl) == s[8:]) {
			return uint32(sl.meta>>32) - 1
		}
	}
}

// tail returns the bytes after the eighth of the token in sl, as a string
// that shares the arena's memory.
func (v *vocab) tail(sl *slot) string {
	sp := v.spans[uint32(sl.meta>>32)-1]
	if sp.n <= 8 {
		return ""
	}
	return unsafe.String(&v.arena[sp.off+8], int(sp.n-8))
}

// pack returns the first 8 bytes of s as a little-endian number, zero
// padded.
func pack(s string) uint64 {
	n := len(s)
	switch {
	case n >= 8:
		return load64(s, 0)
	case n >= 4:
		lo := uint64(load32(s, 0))
		hi := uint64(load32(s, n-4))
		return lo | hi<<(8*(n-4))
	case n >= 2:
		lo := uint64(s[0]) | uint64(s[1])<<8
		hi := uint64(s[n-2]) | uint64(s[n-1])<<8
		return lo | hi<<(8*(n-2))
	case n == 1:
		return uint64(s[0])
	}
	return 0
}

func load64(s string, i int) uint64 {
	return binary.LittleEndian.Uint64(unsafe.Slice(unsafe.StringData(s[i:]), 8))
}

func load32(s string, i int) uint32 {
	return binary.LittleEndian.Uint32(unsafe.Slice(unsafe.StringData(s[i:]), 4))
}

// hash hashes s, whose pack is key.
func hash(s string, key uint64) uint64 {
	h := key
	for i := 8; i < len(s); i += 8 {
		var c uint64
		if i+8 <= len(s) {
			c = load64(s, i)
		} else {
			c = pack(s[i:])
		}
		h = (h ^ c) * 0x9e3779b97f4a7c15
		h ^= h >> 29
	}
	h = (h + uint64(len(s))) * 0xbf58476d1ce4e5b9
	h ^= h >> 31
	return h * 0x94d049bb133111eb
}
