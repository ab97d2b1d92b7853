-- The exact text an audit event's hash covers: RFC 8785 canonical JSON of
-- {"actor","createdAt","data","seq","type"}, members already in JCS order. `data` is stored
-- canonical (produced by the application with an RFC 8785 library); `actor` and `type` are
-- ASCII strings written by the service, for which to_json escapes exactly as JSON.stringify does.
CREATE OR REPLACE FUNCTION ag_audit_canonical(p_seq bigint, p_type text, p_actor text, p_data text, p_created_at timestamptz)
RETURNS text
LANGUAGE sql STABLE PARALLEL SAFE
AS $$
  SELECT '{"actor":' || to_json(p_actor)::text
      || ',"createdAt":"' || to_char(p_created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')
      || '","data":' || p_data
      || ',"seq":' || p_seq::text
      || ',"type":' || to_json(p_type)::text
      || '}'
$$;
