-- Schema version 13: a send writes less. Each message's insert maintained
-- an index that no query uses, and each delivery's checked a foreign key
-- that the two statements writing deliveries keep by construction; together
-- about a fifth of the server's CPU per inserted message.
--
-- messages_by_sender: history by agent filters on sender OR a delivery, which
-- no index on sender serves (the plan walks messages_by_workspace), and the
-- overdue-ack query goes by messages_ack_deadline. A search with a sender
-- filter goes by the search index and filters.
DROP INDEX messages_by_sender;

-- deliveries.message_seq always names a message: deliveries are inserted
-- only with their message, in the same statement (sendbatch.go), and purged
-- only with it, in the same statement (maintain.go). The check cost an index
-- probe and a row lock on the message for every recipient.
ALTER TABLE deliveries DROP CONSTRAINT deliveries_message_seq_fkey;
