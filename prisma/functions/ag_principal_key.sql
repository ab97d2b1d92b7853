-- What makes two votes one voter's (approval_votes.voter_key): `user:<member id>` or
-- `api_key:<service key id>`, the principal of the voting credential (see ag_principal_of).
-- PL/pgSQL for the reason ag_principal_of is: its plan is kept for the session.
CREATE OR REPLACE FUNCTION ag_principal_key(p_actor jsonb)
RETURNS text
LANGUAGE plpgsql STABLE PARALLEL SAFE
AS $$
DECLARE
  v_principal jsonb := ag_principal_of(p_actor);
BEGIN
  RETURN (v_principal->>'type') || ':' || (v_principal->>'id');
END
$$;
