-- Custom SQL migration file, put your code below! --
-- Sessions awaiting authorization are no longer stored (their nonces are signed): the rows of the
-- old ones go, so that the next migration can make expiring_application_id NOT NULL. Their nonces
-- were random, so they could not be authorized anymore either.
DELETE FROM `sessions` WHERE `expiring_application_id` IS NULL;
