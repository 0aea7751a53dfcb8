package hub

// KeyedReader is a reader with the key given, for tests that name their
// readers and look for the key in the store.
func KeyedReader(h *Hub, key string) *Reader { return &Reader{h: h, key: key, live: true} }
