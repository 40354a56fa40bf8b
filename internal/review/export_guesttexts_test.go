package review

// SetGuestTextsBounds sets the read-ahead's bounds for a test; the returned function restores them.
func SetGuestTextsBounds(batch, max int64) (restore func()) {
	b, m := guestTextsBatch, guestTextsMax
	guestTextsBatch, guestTextsMax = batch, max
	return func() { guestTextsBatch, guestTextsMax = b, m }
}
