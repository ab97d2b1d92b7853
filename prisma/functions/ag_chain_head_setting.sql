-- The transaction-local setting that holds an organization's chain head, as '<seq>:<hash>', while
-- a batch defers writing it (see ag_defer_chain_heads); NULL when its head is not deferred. Named
-- by the organization's place in the batch, not its id, so a session never holds more of these
-- settings than a batch has organizations. The place is found with strpos in the comma-separated
-- list: every entry is a uuid's 36 characters, so a match starts an entry and the place follows
-- from its offset, where splitting the list into an array cost each call a copy of every entry.
CREATE OR REPLACE FUNCTION ag_chain_head_setting(p_org uuid)
RETURNS text
LANGUAGE sql STABLE
AS $$
  SELECT 'ag.chain_head_' || ((NULLIF(strpos(current_setting('ag.deferred_heads', true), p_org::text), 0) - 1) / 37 + 1)
$$;
