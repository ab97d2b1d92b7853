-- The principal an actor stands for (docs/members-and-channels.md#principals): credentials are how
-- people and services reach the API, not voters of their own. A member and every key they own are
-- the member; a service key and every key it made are the service key. Owners are stored resolved
-- (api_keys.owner_type, owner_id): one lookup of the key, and one of its owner. A key made before
-- owners existed whose maker nobody recorded (owner_unknown), and a key it made, stand for nobody
-- known: such a principal is never taken for a service key
-- (docs/members-and-channels.md#keys-made-before-owners).
--   p_actor: {"type":"api_key","id"}, or {"type":"user","id",...} (a member, returned as given), or null
-- Returns {"type":"user","id","email","role"} for a key a member owns (email and role read now;
-- both null once the member is removed), {"type":"api_key","id"} for a service key, and
-- {"type":"unattributed","id"} for a key whose owner is unknown, naming the key to attribute.
-- PL/pgSQL rather than SQL: a vote resolves principals two or three times, and PostgreSQL plans a
-- SQL function that is not inlined again at every call, where PL/pgSQL keeps its plans for the
-- session. The owner is looked up only in the table its kind names, not joined: the executor
-- starts every scan of a join at every call, whether the key's kind needs that table or not.
CREATE OR REPLACE FUNCTION ag_principal_of(p_actor jsonb)
RETURNS jsonb
LANGUAGE plpgsql STABLE PARALLEL SAFE
AS $$
DECLARE
  v_key uuid;
  v_owner_type text;
  v_owner uuid;
  v_owner_unknown boolean;
  v_email text;
  v_role text;
BEGIN
  IF p_actor IS NULL OR p_actor->>'type' <> 'api_key' THEN
    RETURN p_actor;
  END IF;
  v_key := (p_actor->>'id')::uuid;
  SELECT owner_unknown, owner_type, owner_id INTO v_owner_unknown, v_owner_type, v_owner FROM api_keys WHERE id = v_key;
  IF v_owner_unknown THEN
    RETURN jsonb_build_object('type', 'unattributed', 'id', v_key);
  ELSIF v_owner_type = 'user' THEN
    SELECT email, role INTO v_email, v_role FROM members WHERE id = v_owner;
    RETURN jsonb_build_object('type', 'user', 'id', v_owner, 'email', v_email, 'role', v_role);
  ELSIF v_owner_type = 'key' THEN
    SELECT owner_unknown INTO v_owner_unknown FROM api_keys WHERE id = v_owner;
    RETURN jsonb_build_object('type', CASE WHEN v_owner_unknown THEN 'unattributed' ELSE 'api_key' END, 'id', v_owner);
  END IF;
  RETURN jsonb_build_object('type', 'api_key', 'id', v_key);
END
$$;
