-- vidfarm app-database bridge, version 1.
-- Inbound tables: the app INSERTs, never updates or deletes. Every row takes its id
-- from one shared sequence and records the writing transaction (xid); vidfarm reads
-- rows in (xid, id) order once no older transaction is still open, so a row that
-- commits late is never skipped.
CREATE SEQUENCE IF NOT EXISTS vidfarm_inbound_seq;

CREATE TABLE IF NOT EXISTS vidfarm_app_accounts (
    id         bigint PRIMARY KEY DEFAULT nextval('vidfarm_inbound_seq'),
    xid        xid8 NOT NULL DEFAULT pg_current_xact_id(),
    account_id text,
    name       text,
    plan       text,
    credits    bigint DEFAULT 0,
    created_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE IF NOT EXISTS vidfarm_app_purchases (
    id          bigint PRIMARY KEY DEFAULT nextval('vidfarm_inbound_seq'),
    xid         xid8 NOT NULL DEFAULT pg_current_xact_id(),
    purchase_id text UNIQUE,
    account_id  text,
    credits     bigint,
    created_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE IF NOT EXISTS vidfarm_app_plan_changes (
    id         bigint PRIMARY KEY DEFAULT nextval('vidfarm_inbound_seq'),
    xid        xid8 NOT NULL DEFAULT pg_current_xact_id(),
    account_id text,
    plan       text,
    created_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE IF NOT EXISTS vidfarm_app_api_keys (
    id         bigint PRIMARY KEY DEFAULT nextval('vidfarm_inbound_seq'),
    xid        xid8 NOT NULL DEFAULT pg_current_xact_id(),
    key_id     text,
    account_id text,
    key_hash   bytea, -- SHA-256 of the whole key (vf_live_...); the key itself is never stored
    key_hint   text,
    created_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE IF NOT EXISTS vidfarm_app_api_key_revocations (
    id         bigint PRIMARY KEY DEFAULT nextval('vidfarm_inbound_seq'),
    xid        xid8 NOT NULL DEFAULT pg_current_xact_id(),
    key_id     text,
    created_at timestamptz NOT NULL DEFAULT now()
);

CREATE INDEX IF NOT EXISTS vidfarm_app_accounts_order ON vidfarm_app_accounts (xid, id);
CREATE INDEX IF NOT EXISTS vidfarm_app_purchases_order ON vidfarm_app_purchases (xid, id);
CREATE INDEX IF NOT EXISTS vidfarm_app_plan_changes_order ON vidfarm_app_plan_changes (xid, id);
CREATE INDEX IF NOT EXISTS vidfarm_app_api_keys_order ON vidfarm_app_api_keys (xid, id);
CREATE INDEX IF NOT EXISTS vidfarm_app_api_key_revocations_order ON vidfarm_app_api_key_revocations (xid, id);

CREATE OR REPLACE FUNCTION vidfarm_inbound_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('vidfarm_inbound', TG_TABLE_NAME);
    RETURN NULL;
END $$;

CREATE OR REPLACE TRIGGER vidfarm_notify AFTER INSERT ON vidfarm_app_accounts
    FOR EACH STATEMENT EXECUTE FUNCTION vidfarm_inbound_notify();
CREATE OR REPLACE TRIGGER vidfarm_notify AFTER INSERT ON vidfarm_app_purchases
    FOR EACH STATEMENT EXECUTE FUNCTION vidfarm_inbound_notify();
CREATE OR REPLACE TRIGGER vidfarm_notify AFTER INSERT ON vidfarm_app_plan_changes
    FOR EACH STATEMENT EXECUTE FUNCTION vidfarm_inbound_notify();
CREATE OR REPLACE TRIGGER vidfarm_notify AFTER INSERT ON vidfarm_app_api_keys
    FOR EACH STATEMENT EXECUTE FUNCTION vidfarm_inbound_notify();
CREATE OR REPLACE TRIGGER vidfarm_notify AFTER INSERT ON vidfarm_app_api_key_revocations
    FOR EACH STATEMENT EXECUTE FUNCTION vidfarm_inbound_notify();

-- Rows vidfarm refused, with why; the rows behind them go on.
CREATE TABLE IF NOT EXISTS vidfarm_inbound_quarantine (
    id             bigint PRIMARY KEY, -- the row's id in its table
    table_name     text NOT NULL,
    row_data       jsonb NOT NULL,
    reason         text NOT NULL,
    quarantined_at timestamptz NOT NULL DEFAULT now()
);

-- The bridge's cursors: 'inbound' (xid, seq of the last row consumed) and
-- 'outbound' (the FSM index through which everything is exported).
CREATE TABLE IF NOT EXISTS vidfarm_bridge_cursor (
    name       text PRIMARY KEY,
    xid        xid8 NOT NULL DEFAULT '0',
    seq        bigint NOT NULL DEFAULT 0,
    fsm_index  bigint NOT NULL DEFAULT 0,
    updated_at timestamptz NOT NULL DEFAULT now()
);
INSERT INTO vidfarm_bridge_cursor (name) VALUES ('inbound'), ('outbound') ON CONFLICT DO NOTHING;

-- Outbound tables: vidfarm writes, the app reads.
CREATE TABLE IF NOT EXISTS vidfarm_ledger (
    fsm_index  bigint NOT NULL,
    seq        integer NOT NULL,
    account_id text NOT NULL,
    kind       text NOT NULL, -- opening, grant, charge, refund
    amount     bigint NOT NULL, -- signed: charges are negative
    balance    bigint NOT NULL, -- the account's balance right after
    video_id   text,
    ref        text, -- purchase id or debit key
    at         timestamptz NOT NULL,
    PRIMARY KEY (fsm_index, seq)
);
CREATE INDEX IF NOT EXISTS vidfarm_ledger_account ON vidfarm_ledger (account_id, fsm_index);

CREATE TABLE IF NOT EXISTS vidfarm_video_events (
    fsm_index       bigint NOT NULL,
    seq             integer NOT NULL,
    video_id        text NOT NULL,
    account_id      text NOT NULL,
    status          text NOT NULL,
    mode            text NOT NULL,
    model           text,
    credits_charged bigint NOT NULL,
    refunded        boolean NOT NULL,
    error           text,
    at              timestamptz NOT NULL,
    PRIMARY KEY (fsm_index, seq)
);
CREATE INDEX IF NOT EXISTS vidfarm_video_events_video ON vidfarm_video_events (video_id, fsm_index);

CREATE TABLE IF NOT EXISTS vidfarm_videos (
    video_id        text PRIMARY KEY,
    account_id      text NOT NULL,
    status          text NOT NULL,
    mode            text NOT NULL,
    model           text,
    credits_charged bigint NOT NULL,
    refunded        boolean NOT NULL,
    error           text,
    updated_at      timestamptz NOT NULL,
    fsm_index       bigint NOT NULL,
    fsm_seq         integer NOT NULL
);

CREATE TABLE IF NOT EXISTS vidfarm_balances (
    account_id text PRIMARY KEY,
    credits    bigint NOT NULL,
    updated_at timestamptz NOT NULL,
    fsm_index  bigint NOT NULL,
    fsm_seq    integer NOT NULL
);
