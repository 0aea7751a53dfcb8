package hub

import "time"

// DefaultUnjoinedTTL is the time to live of a message sent to a name that
// never joined, unless the send names one: the sender learns soon that
// nobody took it (a misspelt name, an agent that never started), not a
// day later.
const DefaultUnjoinedTTL = 10 * time.Minute
