-- A Teams bot may authenticate to Entra with a certificate instead of a client secret (docs/members-and-channels.md).
-- Expand only: existing rows keep their secret, and the previous release reads them as before.
ALTER TABLE teams_integrations ALTER COLUMN app_secret DROP NOT NULL;
ALTER TABLE teams_integrations ADD COLUMN app_certificate text;
ALTER TABLE teams_integrations
  ADD CONSTRAINT teams_integrations_one_credential CHECK (num_nonnulls(app_secret, app_certificate) = 1);
