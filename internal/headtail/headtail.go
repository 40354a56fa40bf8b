// Package headtail keeps the beginning and the end of a stream that may be too long to keep whole.
package headtail

import "sync"

// Output is what was kept of one output stream.
type Output struct {
	Head  []byte `json:"head,omitempty"`
	Tail  []byte `json:"tail,omitempty"`
	Total int64  `json:"total"`
}

// Buffer keeps the first head bytes and the last tail bytes written to it, and counts all.
type Buffer struct {
	mu    sync.Mutex
	head  []byte
	tail  []byte // ring buffer of capacity tailCap, start at tailPos once full
	hcap  int
	tcap  int
	tpos  int
	full  bool
	total int64
}

func New(head, tail int) *Buffer {
	return &Buffer{hcap: head, tcap: tail}
}

func (h *Buffer) Write(p []byte) (int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := len(p)
	h.total += int64(n)
	if room := h.hcap - len(h.head); room > 0 {
		k := min(room, len(p))
		h.head = append(h.head, p[:k]...)
		p = p[k:]
	}
	if h.tcap == 0 {
		return n, nil
	}
	for len(p) > 0 {
		if !h.full {
			k := min(h.tcap-len(h.tail), len(p))
			h.tail = append(h.tail, p[:k]...)
			p = p[k:]
			if len(h.tail) == h.tcap {
				h.full = true
				h.tpos = 0
			}
			continue
		}
		k := copy(h.tail[h.tpos:], p)
		p = p[k:]
		h.tpos = (h.tpos + k) % h.tcap
	}
	return n, nil
}

// Output returns what was kept: head, and the tail bytes that do not overlap the head.
func (h *Buffer) Output() Output {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := Output{Head: append([]byte(nil), h.head...), Total: h.total}
	var tail []byte
	if h.full {
		tail = append(append([]byte(nil), h.tail[h.tpos:]...), h.tail[:h.tpos]...)
	} else {
		tail = append([]byte(nil), h.tail...)
	}
	// Bytes beyond the head: total - len(head). Keep only that many from the tail's end.
	beyond := h.total - int64(len(h.head))
	if int64(len(tail)) > beyond {
		tail = tail[int64(len(tail))-beyond:]
	}
	out.Tail = tail
	return out
}
