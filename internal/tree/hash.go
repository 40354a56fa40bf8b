package tree

import (
	"crypto/sha256"
	"encoding/hex"
	"hash"
	"io"
)

// Hash is the content hash an Entry carries: the SHA-256 of data, in hex. Host and guest
// (the runner) compute it the same way, here.
func Hash(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// HashReader is the Hash of everything r yields.
func HashReader(r io.Reader) (string, error) {
	h := NewHasher()
	if _, err := io.Copy(h, r); err != nil {
		return "", err
	}
	return h.Sum(), nil
}

// Hasher computes the Hash of what is written to it, for content hashed while it is copied.
type Hasher struct{ h hash.Hash }

// NewHasher returns an empty Hasher.
func NewHasher() *Hasher { return &Hasher{h: sha256.New()} }

// Write adds p to the content.
func (h *Hasher) Write(p []byte) (int, error) { return h.h.Write(p) }

// Sum is the Hash of what was written.
func (h *Hasher) Sum() string { return hex.EncodeToString(h.h.Sum(nil)) }
