-- Takes the chain heads of these organizations, in one order (by org id). The chain head is an
-- organization's write lock: every write path takes it before anything else it locks (approval
-- rows, idempotency keys, the monthly counter), and a batch takes all of its organizations' heads
-- at once, in this order. Writers of one organization then queue on its head, and two writers,
-- single or batched, never wait on each other in opposite orders.
CREATE OR REPLACE FUNCTION ag_lock_chain_heads(p_orgs uuid[])
RETURNS void
LANGUAGE plpgsql
AS $$
BEGIN
  -- PL/pgSQL keeps the statement's plan for the session; a LANGUAGE sql function that cannot be
  -- inlined is planned again on every call, which made this the costliest step of a creation.
  PERFORM FROM audit_chain_heads WHERE org_id = ANY (p_orgs) ORDER BY org_id FOR UPDATE;
END
$$;
