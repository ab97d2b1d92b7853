-- One item of ag_write_batch: a creation ({ approval, events, monthlyLimit, month, policyRevision },
-- see ag_create_approval), a vote ({ orgId, id, voter, channel, vote, recordedEvents, advancedEvents,
-- settlement, settledEvents }, see ag_cast_vote) or a timeout ({ orgId, id, settlement, events }, see
-- ag_settle_approval with 'reached'). Returns that function's outcome; a timeout's is 'settled', or
-- 'not_settled' when the approval was no longer waiting or its deadline not yet reached. A vote of
-- the release before stages has no advancedEvents: should it complete a stage, its recorded events
-- are what it appends.
CREATE OR REPLACE FUNCTION ag_write_batch_item(p_kind text, p_item jsonb)
RETURNS text
LANGUAGE plpgsql
AS $$
BEGIN
  IF p_kind = 'create' THEN
    RETURN ag_create_approval(p_item->'approval', p_item->'events', (p_item->>'monthlyLimit')::integer, p_item->>'month',
                              (p_item->>'policyRevision')::uuid);
  ELSIF p_kind = 'vote' THEN
    RETURN ag_cast_vote((p_item->>'orgId')::uuid, (p_item->>'id')::uuid, p_item->'voter', p_item->>'channel', p_item->'vote',
                        p_item->'recordedEvents', coalesce(p_item->'advancedEvents', p_item->'recordedEvents'), p_item->'settlement',
                        p_item->'settledEvents');
  ELSIF p_kind = 'timeout' THEN
    IF ag_settle_approval((p_item->>'orgId')::uuid, (p_item->>'id')::uuid, p_item->'settlement', p_item->'events', 'reached') THEN
      RETURN 'settled';
    END IF;
    RETURN 'not_settled';
  END IF;
  RAISE EXCEPTION 'ag_write_batch has no kind %', p_kind;
END
$$;
