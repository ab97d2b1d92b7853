-- One member per Entra object id in an organization. Built concurrently, alone in its migration, as
-- every index on an existing table is (docs/operations.md, "Releases that overlap").
CREATE UNIQUE INDEX CONCURRENTLY "members_org_id_teams_aad_object_id_key" ON "members"("org_id", "teams_aad_object_id");
