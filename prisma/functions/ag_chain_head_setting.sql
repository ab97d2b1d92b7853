-- The transaction-local setting that holds an organization's chain head, as '<seq>:<hash>', while
-- a batch defers writing it (see ag_defer_chain_heads); NULL when its head is not deferred. Named
-- by the organization's place in the batch, not its id, so a session never holds more of these
-- settings than a batch has organizations.
CREATE OR REPLACE FUNCTION ag_chain_head_setting(p_org uuid)
RETURNS text
LANGUAGE sql STABLE
AS $$
  SELECT 'ag.chain_head_' || array_position(string_to_array(NULLIF(current_setting('ag.deferred_heads', true), ''), ','), p_org::text)
$$;
