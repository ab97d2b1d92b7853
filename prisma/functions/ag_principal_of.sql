-- The principal an actor stands for (docs/members-and-channels.md#principals): credentials are how
-- people and services reach the API, not voters of their own. A member and every key they own are
-- the member; a service key and every key it made are the service key. Owners are stored resolved
-- (api_keys.owner_type, owner_id), so this is one lookup. A key made before owners existed whose
-- maker nobody recorded (owner_unknown), and a key it made, stand for nobody known: such a
-- principal is never taken for a service key (docs/members-and-channels.md#keys-made-before-owners).
--   p_actor: {"type":"api_key","id"}, or {"type":"user","id",...} (a member, returned as given), or null
-- Returns {"type":"user","id","email","role"} for a key a member owns (email and role read now;
-- both null once the member is removed), {"type":"api_key","id"} for a service key, and
-- {"type":"unattributed","id"} for a key whose owner is unknown, naming the key to attribute.
-- PL/pgSQL rather than SQL: a vote resolves principals two or three times, and PostgreSQL plans
-- a SQL function's join again at every call, where PL/pgSQL keeps the plan for the session.
CREATE OR REPLACE FUNCTION ag_principal_of(p_actor jsonb)
RETURNS jsonb
LANGUAGE plpgsql STABLE PARALLEL SAFE
AS $$
BEGIN
  IF p_actor IS NULL OR p_actor->>'type' <> 'api_key' THEN
    RETURN p_actor;
  END IF;
  RETURN coalesce(
      (SELECT CASE
                WHEN k.owner_unknown THEN jsonb_build_object('type', 'unattributed', 'id', k.id)
                WHEN k.owner_type = 'user' THEN jsonb_build_object('type', 'user', 'id', k.owner_id, 'email', m.email, 'role', m.role)
                WHEN o.owner_unknown THEN jsonb_build_object('type', 'unattributed', 'id', k.owner_id)
                WHEN k.owner_type = 'key' THEN jsonb_build_object('type', 'api_key', 'id', k.owner_id)
              END
       FROM api_keys k
       LEFT JOIN members m ON k.owner_type = 'user' AND m.id = k.owner_id
       LEFT JOIN api_keys o ON k.owner_type = 'key' AND o.id = k.owner_id
       WHERE k.id = (p_actor->>'id')::uuid),
      jsonb_build_object('type', 'api_key', 'id', p_actor->>'id'));
END
$$;
