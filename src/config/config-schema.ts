import { z } from 'zod';
import { loadCcsrTables } from '../ccsr/ccsr-tables.ts';
import { isPreventPreset } from '../ccsr/preset-names.ts';
import { MAX_PARTITIONS } from './redis-partitioning.ts';
import { CdsHooksSchema } from './cds-hooks-schema.ts';
import { PatientKeySchema } from './patient-key.ts';
import { WebhookSecretsSchema } from './webhook-secrets.ts';

const SERVICE_ENVIRONMENTS = ['production', 'staging', 'development', 'local'] as const;
export type ServiceEnvironmentName = (typeof SERVICE_ENVIRONMENTS)[number];

const httpUrl = z.url({ protocol: /^https?$/ });
const statusList = z.array(z.string().min(1)).min(1);

/** Problem codes (SNOMED CT, ICD-9-CM, local) to ICD-10-CM: see src/terminology/. */
const TerminologySchema = z.strictObject({
  /** Sources after a coding already in ICD-10-CM, tried in this order; leave one out to disable it. */
  sources: z
    .array(z.enum(['rf2_file', 'csv_file', 'server', 'embedded']))
    .refine((list) => new Set(list).size === list.length, 'a source is listed twice'),
  /** The NLM SNOMED CT to ICD-10-CM map, RF2 ExtendedMap file (`der2_iisssccRefset_ExtendedMap…`). */
  rf2_file: z.string().min(1).nullable(),
  /** A CSV `system,code,icd10cm` for local codes and ICD-9-CM. */
  csv_file: z.string().min(1).nullable(),
  server: z.strictObject({
    /** FHIR base URL of a terminology server answering `ConceptMap/$translate`; null = none. */
    base_url: httpUrl.nullable(),
    method: z.enum(['GET', 'POST']),
    /** The `url` parameter: one ConceptMap's canonical URL; null = let the server choose. */
    concept_map_url: z.string().min(1).nullable(),
    /** `targetsystem` (FHIR R4) or `target` (servers that take the target system there). */
    target_parameter: z.enum(['targetsystem', 'target']),
    timeout_ms: z.int().positive(),
    /** How long an answer (a mapping or "none") is cached in Redis. */
    cache_ttl_s: z.int().positive(),
    /** Set only from the environment (`TERMINOLOGY_TOKEN`). */
    token: z.string().min(1).optional(),
  }),
});

const ServiceSchema = z.strictObject({
  env: z.enum(SERVICE_ENVIRONMENTS),
  environments: z.strictObject(
    Object.fromEntries(
      SERVICE_ENVIRONMENTS.map((name) => [name, z.strictObject({ base_url: httpUrl.nullable() })]),
    ) as Record<ServiceEnvironmentName, z.ZodObject<{ base_url: z.ZodNullable<typeof httpUrl> }>>,
  ),
  /** Set only from the environment (`SERVICE_BASE_URL`); wins over `environments`. */
  base_url: httpUrl.optional(),
  /** Set only from the environment (`SERVICE_API_KEY`). */
  api_key: z.string().min(1).optional(),
  timeout_ms: z.int().positive(),
  retry: z.strictObject({
    limit: z.int().min(0).max(20),
    base_delay_ms: z.int().min(0),
    max_delay_ms: z.int().min(0),
    max_retry_after_ms: z.int().min(0),
  }),
  statuses: z.strictObject({ success: statusList, failure: statusList, lost: statusList }),
  prevent_paths: z.strictObject({
    register: z.string().startsWith('/'),
    recommend: z.string().startsWith('/').includes('{patient_service_id}'),
  }),
});

const port = z.int().min(0).max(65_535);
const ms = z.int().min(0);

const RuleSchema = z.strictObject({
  /** A CCSR category, or the reserved `prevent` (needs `prevent.enabled`). */
  ccsr_category: z
    .string()
    .refine(
      (code) => isPreventPreset(code) || loadCcsrTables().isCategory(code),
      'not a CCSR v2023.1 problem category (nor the reserved preset `prevent`)',
    ),
  /** Only updates whose `changes` name one of these kinds of data. */
  when_changes: z.array(z.string().min(1)).min(1).optional(),
});
export type PresetRule = z.infer<typeof RuleSchema>;

const QueriesSchema = z.strictObject({
  debounce_ms: ms,
  poll: z.strictObject({
    first_delay_ms: z.int().positive(),
    factor: z.number().min(1),
    max_delay_ms: z.int().positive(),
    jitter: z.number().min(0).max(1),
    deadline_ms: z.int().positive(),
  }),
  resubmit_lost: z.int().min(0),
  submit_attempts: z.int().min(1),
  submit_backoff_ms: z.int().positive(),
  auth_pause_ms: z.int().positive(),
  deliver_superseded: z.boolean(),
  concurrency: z.int().min(1),
  /** How often a query may be leased without a written outcome (its workers died) and go on. */
  max_stalled_count: z.int().min(0),
  /**
   * How opened queries reach the `concordance-queries` queue and are submitted (see OutboxRelay
   * and workers/concordance-queries.ts): every `interval_ms` the relay of a partition moves up to
   * `batch` outbox entries into the queue; `lease_ms` is the relay's lease and the submission
   * jobs' lock (a killed worker's relay and submissions are taken over after it).
   */
  dispatch: z.strictObject({
    interval_ms: z.int().min(10),
    batch: z.int().min(1),
    lease_ms: z.int().min(1_000),
  }),
  /**
   * How submitted queries are polled (see PollScheduler): every `interval_ms` a worker leases up to
   * `batch` due polls of a partition (no more than `concurrency` GETs in flight); a poll not
   * written back within `lease_ms` (its worker died) comes due again. `latency_window` recent job
   * latencies per category teach the schedule when to poll.
   */
  polling: z
    .strictObject({
      interval_ms: z.int().min(5),
      batch: z.int().min(1),
      concurrency: z.int().min(1),
      lease_ms: z.int().min(1_000),
      latency_window: z.int().min(5).max(1_000),
    })
    .default({
      interval_ms: 50,
      batch: 500,
      concurrency: 200,
      lease_ms: 60_000,
      latency_window: 64,
    }),
  /**
   * How long a query of a record without a birth date waits for one (see DemographicsWait)
   * before it ends `failed` with ERR_RECORD_WAITING_EXPIRED. @defaultValue 2592000 (30 days)
   */
  demographics_wait_s: z.int().min(0).default(2_592_000),
});

// --- HL7 v2 patient identity (issue 9): ordered identifier rules ---
const idText = z
  .string()
  .min(1)
  .regex(/^[^|]+$/, 'no "|"');
/**
 * One identifier rule, tried on each repetition of the field in order: `type_codes` (PID-3.5) and
 * `authorities` (PID-3.4, namespace id or universal id) must both match when given; `any: true`
 * takes the first non-empty repetition.
 */
const PatientIdRuleSchema = z
  .strictObject({
    type_codes: z.array(idText).min(1).optional(),
    authorities: z.array(idText).min(1).optional(),
    any: z.literal(true).optional(),
  })
  .refine((r) => (r.any === true) !== (r.type_codes !== undefined || r.authorities !== undefined), {
    message: 'a rule has `type_codes` and/or `authorities`, or is `any: true` alone',
  });
export type PatientIdRule = z.infer<typeof PatientIdRuleSchema>;

const PatientIdRulesSchema = z.strictObject({
  /** Tried in order on PID-3, then on each `fallback_fields` field; the first match wins. */
  rules: z.array(PatientIdRuleSchema).min(1),
  /** Old versions' fields: PID-2 (patient id, external) and PID-4 (alternate patient id). */
  fallback_fields: z.array(z.enum(['PID-2', 'PID-4'])),
  /**
   * Authorities whose ids are keyed by the id alone; any other authority makes the key
   * `<authority>|<id>`. `['*']`: every id is keyed alone (the form before issue 9).
   */
  unqualified_authorities: z.array(idText),
});
/** The form before issue 9 (`type_code`, `assigning_authority`): still read, keyed as before. */
const LegacyPatientIdSchema = z
  .strictObject({
    type_code: idText,
    assigning_authority: idText.nullable(),
  })
  .transform(({ type_code, assigning_authority }): z.infer<typeof PatientIdRulesSchema> => ({
    rules: [
      {
        type_codes: [type_code],
        ...(assigning_authority === null ? {} : { authorities: [assigning_authority] }),
      },
    ],
    fallback_fields: [],
    unqualified_authorities: ['*'],
  }));
const MIXED_FORMS =
  'hl7v2.patient_id: give either `rules` (with `fallback_fields` and `unqualified_authorities`, see ' +
  'config/default.yaml) or the old `type_code` and `assigning_authority`, not a mix of the two';
const PatientIdSchema = z.preprocess(
  (value, ctx) => {
    if (typeof value === 'object' && value !== null && 'rules' in value && 'type_code' in value) {
      ctx.addIssue({ code: 'custom', message: MIXED_FORMS, input: value });
    }
    return value;
  },
  z.union([PatientIdRulesSchema, LegacyPatientIdSchema]),
);
export type PatientIdConfig = z.infer<typeof PatientIdRulesSchema>;
// --- end of HL7 v2 patient identity ---

const Hl7v2Schema = z.strictObject({
  mllp: z.strictObject({
    enabled: z.boolean(),
    port,
    host: z.string().min(1),
    max_message_bytes: z.int().min(1_024),
    idle_timeout_ms: z.int().positive(),
    // Outages (issue 8): connections held at once, and how long one message may take to handle.
    max_connections: z.int().positive(),
    handling_timeout_ms: z.int().positive(),
    tls: z.strictObject({
      /** `MLLP_TLS_CERT_FILE` / `MLLP_TLS_KEY_FILE`: PEM, both or neither; TLS when set. */
      cert_path: z.string().min(1).nullable(),
      key_path: z.string().min(1).nullable(),
      // Transport (issue 20): client certificates (docs/transport-security.md).
      /** `MLLP_TLS_CA_FILE`: the CAs that sign client certificates. @defaultValue null */
      ca_path: z.string().min(1).nullable().default(null),
      /** `MLLP_TLS_CLIENT_CERTIFICATES`; request and require need `ca_path`. @defaultValue none */
      client_certificates: z.enum(['none', 'request', 'require']).default('none'),
    }),
  }),
  patient_id: PatientIdSchema,
  transient_reply: z.enum(['close', 'AR']),
  ignored_types: z.array(z.string().min(1)),
  // --- Character sets (issue 9): each listener's default when MSH-18 is empty ---
  /** HL7 table 0211 names (`8859/1`, `UNICODE UTF-8`…) or `windows-1252` and the like. */
  charset: z
    .strictObject({ mllp_default: z.string().min(1), http_default: z.string().min(1) })
    .default({ mllp_default: 'UNICODE UTF-8', http_default: 'UNICODE UTF-8' }),
  // --- end of character sets ---
});
export type Hl7v2Config = z.infer<typeof Hl7v2Schema>;

// --- Secrets and connections (issue 8): Redis TLS files, outbound CA bundle and proxy ---
const pemFile = z.string().min(1).nullable();

/** PEM files for `rediss://` (the user and password come from the URL). */
const RedisTlsSchema = z
  .strictObject({
    /** `REDIS_TLS_CA_FILE`: trusted on top of Node's bundled roots. */
    ca_file: pemFile,
    /** `REDIS_TLS_CERT_FILE` / `REDIS_TLS_KEY_FILE`: a client certificate, when Redis asks for one. */
    cert_file: pemFile,
    key_file: pemFile,
  })
  .default({ ca_file: null, cert_file: null, key_file: null });
export type RedisTlsConfig = z.infer<typeof RedisTlsSchema>;

const proxyUrl = z.url({ protocol: /^https?$/ }).optional();

/** Outbound HTTP(S): the service, the FHIR server and the webhook receiver. */
const OutboundSchema = z
  .strictObject({
    /** `OUTBOUND_CA_FILE`: PEM bundle trusted on top of Node's bundled roots. */
    ca_file: pemFile,
    /** Set only from the environment: `HTTP_PROXY`, `HTTPS_PROXY`, `NO_PROXY` (or lower case). */
    proxy: z
      .strictObject({ http: proxyUrl, https: proxyUrl, no_proxy: z.string().optional() })
      .default({}),
  })
  .default({ ca_file: null, proxy: {} });
export type OutboundConfig = z.infer<typeof OutboundSchema>;
// --- end of secrets and connections ---

/**
 * One classic R4 rest-hook subscription: its endpoint is `/v1/fhir/rest-hook/<name>`; a ping (an
 * empty POST) reads what changed with `criteria` (the Subscription's own criteria, e.g.
 * `Condition?category=problem-list-item`) plus `_lastUpdated=ge<last read - overlap_s>`.
 */
const FhirRestHookSchema = z.strictObject({
  name: z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, 'letters, digits, - and _ (at most 64)'),
  criteria: z
    .string()
    .regex(/^[A-Z][A-Za-z]+(\?.*)?$/, 'a FHIR search: <ResourceType>?<parameters>'),
  /** How far back the first ping reads. @defaultValue 86400 */
  first_lookback_s: z.int().positive().default(86_400),
  /** Each ping re-reads this much before the last read (clock skew; re-reads are harmless). @defaultValue 300 */
  overlap_s: z.int().nonnegative().default(300),
});

export const ConfigSchema = z
  .strictObject({
    service: ServiceSchema,
    log: z.strictObject({
      level: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']),
    }),
    redis: z.strictObject({
      url: z.url({ protocol: /^rediss?$/ }),
      prefix: z
        .string()
        .min(1)
        .regex(/^[^:\s]+$/, 'no colons or spaces'),
      tls: RedisTlsSchema,
      /** How long a command on a request path (ingest, status) may wait for Redis's answer. */
      command_timeout_ms: z.int().positive(),
      // --- Scale out (issue 10): Redis Cluster and partitions ---
      /**
       * `REDIS_CLUSTER_NODES` (comma-separated `host:port`): some nodes of a Redis Cluster; every
       * process then uses ioredis's `Cluster` client, with the URL's user, password and TLS.
       * @defaultValue none (one Redis server at `url`)
       */
      cluster_nodes: z
        .array(
          z
            .string()
            .regex(/^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9_.-]+):\d{1,5}$/, 'host:port (IPv6 in brackets)')
            .refine((node) => {
              const port = /:(\d+)$/.exec(node)?.[1];
              // A node without a port is the regex's problem, reported once.
              return port === undefined || (Number(port) >= 1 && Number(port) <= 65_535);
            }, 'a port from 1 to 65535'),
        )
        .default([]),
      /**
       * `REDIS_PARTITIONS`: patients are spread over this many partitions, each with its own hash
       * tag, due set and queues (see src/queues/partitions.ts). 1 keeps every key as it has always
       * been. @defaultValue 1
       */
      partitions: z.int().min(1).max(MAX_PARTITIONS).default(1),
      // --- end of scale out ---
    }),
    ingest: z.strictObject({
      port,
      host: z.string().min(1),
      body_limit_bytes: z.int().positive(),
      idempotency_ttl_s: z.int().positive(),
      /** `POST /v1/record-updates/batch`: most items, and the largest body (bytes). */
      batch: z.strictObject({
        max_items: z.int().positive(),
        max_bytes: z.int().positive(),
      }),
      /** Local ids whose service id the process keeps (see `PatientLocator`); 0 turns it off. */
      crosswalk_cache: z.strictObject({ max_entries: z.int().min(0) }),
      /** Set only from the environment (`INGEST_TOKENS`, comma-separated). */
      tokens: z.array(z.string().min(16, 'a token must hold at least 16 characters')).optional(),
      // Transport (issue 20): HTTPS on the ingest port (docs/transport-security.md).
      tls: z
        .strictObject({
          /** `INGEST_TLS_CERT_FILE` / `INGEST_TLS_KEY_FILE`: PEM, both or neither; HTTPS when set. */
          cert_file: pemFile,
          key_file: pemFile,
          /** `INGEST_TLS_CA_FILE`: the CAs that sign client certificates. */
          ca_file: pemFile,
          /** `INGEST_TLS_CLIENT_CERTIFICATES`; request and require need `ca_file`. */
          client_certificates: z.enum(['none', 'request', 'require']).default('none'),
        })
        .default({ cert_file: null, key_file: null, ca_file: null, client_certificates: 'none' }),
    }),
    identity: z
      .strictObject({
        /** Set only from the environment (`CROSSWALK_KEY`). */
        crosswalk_key: z.string().min(1).optional(),
        /**
         * Set only from the environment (`CROSSWALK_KEYS`: `<id>:<secret>[,<id>:<secret>...]`, the
         * sealing key first; see `CrosswalkKeyring`). Instead of `crosswalk_key`, never with it.
         */
        crosswalk_keys: z.string().min(1).optional(),
        /** One key across feeds (issue 20): see `PatientKeySchema`. @defaultValue no mapping */
        patient_key: PatientKeySchema.prefault({}),
      })
      .prefault({}),
    fhir: z.strictObject({
      /** `FHIR_BASE_URL`: where id-only notification payloads are fetched from. */
      base_url: httpUrl.nullable(),
      /** The Patient identifier system whose value is the local id; null = the logical id. */
      patient_identifier_system: z.string().min(1).nullable(),
      timeout_ms: z.int().positive(),
      /** Set only from the environment (`FHIR_TOKEN`). */
      token: z.string().min(1).optional(),
      /** Classic R4 rest-hook subscriptions (see `FhirRestHookSchema`). @defaultValue none */
      rest_hooks: z.array(FhirRestHookSchema).default([]),
    }),
    hl7v2: Hl7v2Schema,
    outbound: OutboundSchema,
    terminology: TerminologySchema,
    presets: z.strictObject({
      rules: z.array(RuleSchema),
      from_problem_list: z.strictObject({
        enabled: z.boolean(),
        categories: z.enum(['all', 'outpatient_default']),
      }),
    }),
    privacy: z
      .strictObject({
        identifying_fields: z.array(z.string().min(1)),
        /** `metadata` keys sent to the service; all others are removed (see strip-free-text.ts). */
        metadata_allowed_keys: z.array(z.string().min(1)),
        /** A record not updated for this many days expires (0: kept until purged). */
        record_retention_days: z.int().min(0),
      })
      .superRefine(({ identifying_fields, metadata_allowed_keys }, ctx) => {
        const identifying = new Set(identifying_fields.map((field) => field.toLowerCase()));
        metadata_allowed_keys.forEach((key, i) => {
          if (identifying.has(key.toLowerCase())) {
            ctx.addIssue({
              code: 'custom',
              path: ['metadata_allowed_keys', i],
              message:
                'also listed in privacy.identifying_fields: an identifying key is never sent',
            });
          }
        });
      }),
    /** Prevent: healthy-behaviour recommendations for patients with the `prevent` preset (docs/prevent.md). */
    prevent: z
      .strictObject({
        /** Off: the `prevent` preset is refused (route and rules) and no Prevent request is made. */
        enabled: z.boolean(),
        /** Every patient has the `prevent` preset (as a rule without `when_changes` would give). */
        every_patient: z.boolean(),
        /**
         * Set only from the environment (`PREVENT_ID_KEY`): the HMAC key of the pseudonymous
         * `unique_patient_identifier`. Never rotated (see docs/prevent.md).
         */
        id_key: z.string().min(1).optional(),
      })
      .default({ enabled: false, every_patient: false }),
    /** Patient administration: purge and opt-out routes, and their audit log. */
    admin: z.strictObject({
      /** Set only from the environment (`ADMIN_TOKENS`, comma-separated): the admin routes' tokens. */
      tokens: z.array(z.string().min(16, 'a token must hold at least 16 characters')).optional(),
      audit: z.strictObject({
        /** Entries the `${prefix}:audit` stream keeps (approximately; the oldest are trimmed). */
        max_entries: z.int().min(1_000),
      }),
      /**
       * The operator's queue view (bull-board, read-only) on the ingest port under `/admin/queues`
       * (docs/queue-view.md). Off unless `enabled` (`QUEUE_VIEW_ENABLED`).
       */
      queue_view: z.strictObject({
        enabled: z.boolean(),
        /**
         * Set only from the environment (`QUEUE_VIEW_TOKENS`, comma-separated): the view's own
         * tokens, none of them an ingest or admin token.
         */
        tokens: z.array(z.string().min(16, 'a token must hold at least 16 characters')).optional(),
        /** How long a login lasts (the session cookie's lifetime). */
        session_ttl_s: z
          .int()
          .min(60)
          .max(7 * 86_400),
        /**
         * When the session cookie is marked `Secure`: `auto` when the sign-in came over TLS (to this
         * process, or to a proxy that says so with `X-Forwarded-Proto: https`), `always` always.
         */
        secure_cookie: z.enum(['auto', 'always']),
      }),
    }),
    queries: QueriesSchema,
    /** The CDS Hooks service on the ingest port (docs/cds-hooks.md). @defaultValue off */
    cds_hooks: CdsHooksSchema,
    /**
     * The message trace (docs/message-trace.md): each accepted message's receipt under its sender's
     * control id, and each query's and delivery's steps, kept in Redis without identifiers in plain
     * text, for `concordance-worker trace`, the admin route and the queue view's Messages page.
     */
    trace: z
      .strictObject({
        /** `TRACE_ENABLED`: off, no trace entry is written (the per-feed counters still count). */
        enabled: z.boolean(),
        /** `TRACE_RETENTION_DAYS`: entries expire this long after their last write. */
        retention_days: z.int().min(1).max(90),
        /**
         * `TRACE_KEEP_RAW`: also keep each message as received, sealed under the crosswalk key,
         * shown only by `trace --raw` to an admin and audited. Off by default.
         */
        keep_raw: z.boolean(),
        /** Receipts kept per control id (a resent message adds one; the oldest go first). */
        max_receipts: z.int().min(1).max(100),
      })
      .default({ enabled: true, retention_days: 7, keep_raw: false, max_receipts: 20 }),
    worker: z.strictObject({
      metrics_port: port,
      host: z.string().min(1),
      /**
       * `WORKER_PARTITIONS` (comma-separated): the partitions whose queues this process works.
       * @defaultValue null: every partition
       */
      partitions: z
        .array(
          z.union([
            z.int().min(0),
            z.string().regex(/^\d+$/, 'a partition number').transform(Number),
          ]),
        )
        .min(1)
        .refine((list) => new Set(list).size === list.length, 'a partition is listed twice')
        .nullable()
        .default(null),
    }),
    /** How long SIGTERM/SIGINT may take before the process exits anyway (`SHUTDOWN_GRACE_MS`). */
    shutdown: z.strictObject({ grace_ms: z.int().min(1_000) }),
    delivery: z.strictObject({
      only_changed: z.boolean(),
      change_detection: z.strictObject({ ignore_fields: z.array(z.string().min(1)) }),
      outbound_queue: z.strictObject({
        enabled: z.boolean(),
        name: z.string().regex(/^[A-Za-z0-9_-]+$/),
        /** Set only from the environment (`OUTBOUND_KEY`): seals `patient_id` for the consumer. */
        key: z.string().min(1).optional(),
        /**
         * Set only from the environment (`OUTBOUND_KEYS`, instead of `OUTBOUND_KEY`): the keyring of
         * a live rotation, `<id>:<secret>[,...]`, the sealing key first (see outbound-keyring.ts).
         */
        keys: z.string().min(1).optional(),
        retention: z.strictObject({
          /** Consumed (completed or failed) events kept: at most `count`, for at most `age_s`. */
          count: z.int().min(0),
          age_s: z.int().min(0),
          /** An event nobody consumed within this time is dropped (and counted). */
          waiting_age_s: z.int().positive(),
        }),
      }),
      webhook: z.strictObject({
        /** `WEBHOOK_URL`; the webhook is on when set. */
        url: httpUrl.nullable(),
        /** `WEBHOOK_ALLOW_PLAIN_HTTP`: an `http://` URL to another machine than this one. */
        allow_plain_http: z.boolean(),
        /**
         * Set only from the environment (`WEBHOOK_SECRET`): one or more `whsec_` + base64 secrets,
         * each signing every delivery (see webhook-secrets.ts).
         */
        secret: WebhookSecretsSchema.optional(),
        timeout_ms: z.int().positive(),
        backoff: z.strictObject({
          first_delay_ms: z.int().positive(),
          max_delay_ms: z.int().positive(),
          jitter: z.number().min(0).max(1),
        }),
        max_age_ms: z.int().positive(),
        /** While the endpoint fails, one waiting delivery is tried this often (0 = never). */
        probe_interval_ms: z.int().min(0),
        concurrency: z.int().min(1),
      }),
      dead_letters: z.strictObject({ retention_days: z.int().positive() }),
    }),
  })
  .superRefine((config, ctx) => {
    // A claim must outlast its submission: were a live worker's POST still under way when the
    // lease ends, the query would come due again and be sent twice (POST is never retried, so one
    // timeout bounds it).
    const { lease_ms } = config.queries.dispatch;
    if (lease_ms <= config.service.timeout_ms) {
      ctx.addIssue({
        code: 'custom',
        path: ['queries', 'dispatch', 'lease_ms'],
        message: `must be above service.timeout_ms (${config.service.timeout_ms}): a claim must outlast its POST, or a slow submission comes due again and is sent twice`,
        input: lease_ms,
      });
    }
  });

export type Config = z.infer<typeof ConfigSchema>;
export type ServiceConfig = Config['service'];
