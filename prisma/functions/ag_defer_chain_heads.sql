-- From now until ag_write_chain_heads, in this transaction, ag_append_audit_events moves these
-- organizations' chain heads in transaction-local settings instead of their rows. A group-commit
-- batch calls it after taking the heads (ag_lock_chain_heads), and ag_write_chain_heads before it
-- returns, so each head row is written once per batch: a row updated once per item leaves dozens
-- of versions of itself that nothing can prune before the commit, and every later read of that
-- organization's head wades through them, which slows the creations of one organization far
-- below those of many.
-- PL/pgSQL: as a SQL function (a SELECT with a FROM, which is never inlined) its body was parsed
-- and planned again at every batch.
CREATE OR REPLACE FUNCTION ag_defer_chain_heads(p_orgs uuid[])
RETURNS void
LANGUAGE plpgsql
AS $$
BEGIN
  PERFORM set_config('ag.deferred_heads', array_to_string(p_orgs, ','), true);
END
$$;
