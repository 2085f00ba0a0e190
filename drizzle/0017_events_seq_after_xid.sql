-- An outbox event takes a transaction id before its seq (decision 244). The outbox consumers
-- (notifier, trigger dispatcher) step over a hole in `seq` once every transaction that was
-- running when a later seq was seen has ended. A transaction that drew its seq before it had a
-- transaction id (an INSERT into events that is the transaction's first write draws the seq
-- when it evaluates this default, and gets its id only when it writes the row) was invisible to
-- that test: a later snapshot's xmin could pass it while it still ran, the hole counted as
-- final, and its event was skipped by every consumer. pg_current_xact_id() assigns the id first;
-- CASE evaluates its condition before its result, so the id always precedes the seq.
ALTER TABLE "events" ALTER COLUMN "seq" SET DEFAULT (CASE WHEN pg_current_xact_id() IS NOT NULL THEN nextval('events_seq_seq'::regclass) END);
