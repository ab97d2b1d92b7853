-- What makes two votes one voter's (approval_votes.voter_key): `user:<member id>` or
-- `api_key:<service key id>`, the principal of the voting credential (see ag_principal_of).
-- A SQL function of one expression, inlined into the query that calls it.
CREATE OR REPLACE FUNCTION ag_principal_key(p_actor jsonb)
RETURNS text
LANGUAGE sql STABLE PARALLEL SAFE
AS $$
  SELECT ag_key_of_principal(ag_principal_of(p_actor))
$$;
