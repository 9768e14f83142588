-- +goose Up

-- One sequence orders every change a mobile client may need to pull.
CREATE SEQUENCE change_seq;

CREATE TABLE schools (
    id                 uuid PRIMARY KEY,
    unitid             integer UNIQUE,
    name               text NOT NULL,
    city               text NOT NULL DEFAULT '',
    state              char(2) NOT NULL,
    zip                text NOT NULL DEFAULT '',
    url                text NOT NULL DEFAULT '',
    lat                double precision,
    lon                double precision,
    region             text NOT NULL,
    control            smallint NOT NULL DEFAULT 0 CHECK (control BETWEEN 0 AND 3),
    locale             smallint,
    size               integer CHECK (size >= 0),
    pred_degree        smallint,
    admission_rate     real CHECK (admission_rate BETWEEN 0 AND 1),
    sat25              smallint CHECK (sat25 BETWEEN 400 AND 1600),
    sat75              smallint CHECK (sat75 BETWEEN 400 AND 1600),
    act25              smallint CHECK (act25 BETWEEN 1 AND 36),
    act75              smallint CHECK (act75 BETWEEN 1 AND 36),
    tuition_in         integer,
    tuition_out        integer,
    avg_net_price      integer,
    net_price_by_band  integer[] NOT NULL DEFAULT '{NULL,NULL,NULL,NULL,NULL}',
    pell_rate          real CHECK (pell_rate BETWEEN 0 AND 1),
    loan_rate          real CHECK (loan_rate BETWEEN 0 AND 1),
    median_debt        integer,
    grad_rate          real CHECK (grad_rate BETWEEN 0 AND 1),
    retention_rate     real CHECK (retention_rate BETWEEN 0 AND 1),
    earnings_6yr       integer,
    earnings_10yr      integer,
    program_shares     jsonb NOT NULL DEFAULT '{}',
    active             boolean NOT NULL DEFAULT true,
    source             text NOT NULL,
    change_seq         bigint NOT NULL DEFAULT nextval('change_seq'),
    created_at         timestamptz NOT NULL DEFAULT now(),
    updated_at         timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX schools_state_idx ON schools (state);
CREATE INDEX schools_change_seq_idx ON schools (change_seq);

CREATE TABLE zip_centroids (
    zip   char(5) PRIMARY KEY,
    lat   double precision NOT NULL,
    lon   double precision NOT NULL,
    state char(2) NOT NULL
);

CREATE TABLE students (
    id                 uuid PRIMARY KEY,
    name               text,
    email              text,
    graduation_year    text,
    gpa                real CHECK (gpa BETWEEN 0 AND 5),
    sat                smallint CHECK (sat BETWEEN 400 AND 1600),
    act                smallint CHECK (act BETWEEN 1 AND 36),
    home_lat           double precision,
    home_lon           double precision,
    state              char(2),
    zip                text,
    max_distance_miles integer,
    budget             integer,
    family_income      integer,
    intended_majors    text[] NOT NULL DEFAULT '{}',
    preferred_size     text,
    preferred_setting  text,
    swipe_count        integer NOT NULL DEFAULT 0,
    version            bigint NOT NULL DEFAULT 1,
    created_at         timestamptz NOT NULL DEFAULT now(),
    updated_at         timestamptz NOT NULL DEFAULT now(),
    deleted_at         timestamptz
);

-- Every interaction a student has with a school. client_id is the
-- client-generated id (swipe_id, Idempotency-Key or a sync change id) that
-- makes retries and replays store nothing twice.
CREATE TABLE swipes (
    id               bigserial PRIMARY KEY,
    student_id       uuid NOT NULL REFERENCES students (id),
    school_id        uuid NOT NULL REFERENCES schools (id),
    direction        text NOT NULL CHECK (direction IN ('left', 'right')),
    interaction_type text NOT NULL DEFAULT 'swipe' CHECK (interaction_type IN ('swipe', 'tap', 'detail_view', 'save')),
    counted          boolean NOT NULL,
    is_probe         boolean NOT NULL DEFAULT false,
    time_spent       real,
    client_id        text,
    response         jsonb,
    occurred_at      timestamptz NOT NULL DEFAULT now(),
    created_at       timestamptz NOT NULL DEFAULT now(),
    change_seq       bigint NOT NULL DEFAULT nextval('change_seq'),
    UNIQUE (student_id, client_id)
);
CREATE INDEX swipes_student_created_idx ON swipes (student_id, created_at);
CREATE INDEX swipes_student_seq_idx ON swipes (student_id, change_seq);

CREATE TABLE feedback (
    id          bigserial PRIMARY KEY,
    student_id  uuid NOT NULL REFERENCES students (id),
    school_id   uuid NOT NULL REFERENCES schools (id),
    reason      text NOT NULL CHECK (reason IN ('too_expensive', 'wrong_location', 'not_my_major', 'too_selective', 'perfect_match')),
    comment     text,
    client_id   text,
    occurred_at timestamptz NOT NULL DEFAULT now(),
    created_at  timestamptz NOT NULL DEFAULT now(),
    change_seq  bigint NOT NULL DEFAULT nextval('change_seq'),
    UNIQUE (student_id, client_id)
);
CREATE INDEX feedback_student_seq_idx ON feedback (student_id, change_seq);

CREATE TABLE category_preferences (
    student_id  uuid NOT NULL REFERENCES students (id),
    category_id text NOT NULL,
    direction   text NOT NULL CHECK (direction IN ('left', 'right')),
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (student_id, category_id)
);

-- The learned model of one student. version increases with every fold, so
-- read models built from an older state never overwrite newer ones.
CREATE TABLE learning_state (
    student_id       uuid PRIMARY KEY REFERENCES students (id),
    model            jsonb NOT NULL,
    weights          jsonb NOT NULL,
    last_swipe_id    bigint NOT NULL DEFAULT 0,
    last_feedback_id bigint NOT NULL DEFAULT 0,
    version          bigint NOT NULL DEFAULT 0,
    change_seq       bigint NOT NULL DEFAULT nextval('change_seq'),
    updated_at       timestamptz NOT NULL DEFAULT now()
);

-- Transactional outbox: written in the same transaction as the fact it
-- announces, handed to the queue by the API and, as a repair path, by the
-- worker's relay.
CREATE TABLE outbox (
    id           bigserial PRIMARY KEY,
    topic        text NOT NULL,
    student_id   uuid,
    payload      jsonb NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    published_at timestamptz
);
CREATE INDEX outbox_unpublished_idx ON outbox (id) WHERE published_at IS NULL;

CREATE TABLE webhook_deliveries (
    id              bigserial PRIMARY KEY,
    outbox_id       bigint NOT NULL REFERENCES outbox (id),
    endpoint_url    text NOT NULL,
    webhook_id      text NOT NULL,
    event           text NOT NULL,
    status          text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'succeeded', 'parked', 'disabled')),
    attempts        integer NOT NULL DEFAULT 0,
    next_attempt_at timestamptz,
    last_error      text,
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now(),
    UNIQUE (outbox_id, endpoint_url)
);
CREATE INDEX webhook_deliveries_status_idx ON webhook_deliveries (status, updated_at);

CREATE TABLE webhook_attempts (
    id          bigserial PRIMARY KEY,
    delivery_id bigint NOT NULL REFERENCES webhook_deliveries (id),
    attempt     integer NOT NULL,
    status_code integer,
    latency_ms  integer NOT NULL,
    error       text,
    created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX webhook_attempts_delivery_idx ON webhook_attempts (delivery_id);

-- +goose Down
DROP TABLE webhook_attempts;
DROP TABLE webhook_deliveries;
DROP TABLE outbox;
DROP TABLE learning_state;
DROP TABLE category_preferences;
DROP TABLE feedback;
DROP TABLE swipes;
DROP TABLE students;
DROP TABLE zip_centroids;
DROP TABLE schools;
DROP SEQUENCE change_seq;
