import { z } from 'zod';
import { formatCount } from '../../lib/display-count.js';
import { jsonObject, storableInstant, storableString } from '../../lib/json-input.js';
import { pageLimitSchema } from '../../lib/paging.js';

export const MAX_TIMEOUT_SECONDS = 2_592_000;
/** The longest standing approval any policy may allow: a day. */
export const MAX_STANDING_SECONDS = 86_400;

const policyKey = (label: string) => storableString(label).min(1).max(200);

export const policyRuleSchema = z
  .object({
    when: storableString('when')
      .min(1)
      .max(4096)
      .meta({ description: 'CEL expression over action, payload, agent and context; must return a boolean.' }),
    outcome: z.enum(['allow', 'review']),
  })
  .strict();

/**
 * Where a decision may come from: an API key, a console session, an email link, Slack, Teams (see
 * docs/policies.md). The one list of channels: schemas, types and defaults derive from it, and
 * test/decision-channels.test.ts holds the Prisma schema and the database's defaults against it.
 */
export const DECISION_CHANNELS = ['api', 'console', 'email', 'slack', 'teams'] as const;
export type DecisionChannel = (typeof DECISION_CHANNELS)[number];

const unique = <T>(values: readonly T[]) => new Set(values).size === values.length;

export const reviewersSchema = z
  .strictObject({
    roles: z
      .array(z.enum(['reviewer', 'admin'], { error: 'roles may name reviewer and admin; a viewer never decides' }))
      .refine(unique, 'roles must not repeat')
      .default([]),
    members: z
      .array(
        z
          .email()
          .max(320)
          .transform((email) => email.toLowerCase()),
      )
      .max(100)
      .refine(unique, 'members must not repeat')
      .default([]),
  })
  .meta({ description: 'Who may decide: members whose role is listed, or whose email is. Default: reviewers and admins.' });

const DEFAULT_REVIEWERS: Reviewers = { roles: ['reviewer', 'admin'], members: [] };
type Reviewers = z.output<typeof reviewersSchema>;

const quorumSchema = z.number().int().min(1).max(10);

/** The most stages of reviewers a policy may name (docs/policies.md#stages). */
export const MAX_STAGES = 5;

/** One stage of reviewers, decided in turn (docs/policies.md#stages). */
export const reviewStageSchema = z
  .strictObject({
    name: storableString('name').min(1).max(100).meta({ description: 'What the stage is called where reviewers see it.' }),
    reviewers: reviewersSchema.refine(
      (reviewers) => reviewers.roles.length + reviewers.members.length > 0,
      'a stage must name at least one role or member as its reviewers',
    ),
    quorum: quorumSchema.default(1).meta({ description: 'Distinct approvals this stage needs before the next one begins.' }),
  })
  .meta({ id: 'ReviewStage' });
export type ReviewStage = z.output<typeof reviewStageSchema>;

const stagesSchema = z
  .array(reviewStageSchema)
  .min(1, 'stages must name at least one stage')
  .max(MAX_STAGES, `stages may name at most ${MAX_STAGES} stages`)
  .superRefine((stages, context) => {
    const seen = new Set<string>();
    for (const [index, stage] of stages.entries()) {
      if (seen.has(stage.name))
        context.addIssue({ code: 'custom', path: [index, 'name'], message: `stage names must not repeat ('${stage.name}')` });
      seen.add(stage.name);
    }
  })
  .meta({
    description:
      'Stages of reviewers decided in turn, each with its own reviewers and quorum, instead of reviewers and quorum; a rejection or a request for changes in any stage settles the request.',
  });

const policyFields = z
  .object({
    rules: z.array(policyRuleSchema).max(100).default([]),
    defaultOutcome: z.enum(['allow', 'review']).default('review'),
    timeoutSeconds: z.number().int().min(1).max(MAX_TIMEOUT_SECONDS).default(3600),
    onTimeout: z.enum(['expire', 'escalate']).default('expire'),
    escalateTo: policyKey('escalateTo').nullable().default(null),
    reviewers: reviewersSchema.optional().meta({ description: 'Default: reviewers and admins. Not with stages.' }),
    quorum: quorumSchema
      .optional()
      .meta({ description: 'Distinct approvals a request needs; one rejection rejects. Default 1. Not with stages.' }),
    // null as the API shows a policy without stages, so that a policy read can be saved back as it is.
    stages: stagesSchema.nullable().optional(),
    allowSelfApproval: z
      .boolean()
      .default(false)
      .meta({ description: 'Whether the member a request is on behalf of, or whoever created it, may vote on it.' }),
    channels: z
      .array(z.enum(DECISION_CHANNELS))
      .min(1)
      .refine(unique, 'channels must not repeat')
      .default([...DECISION_CHANNELS])
      .meta({ description: 'Where a decision may be made.' }),
  })
  .strict();

type DecisionRulesInput = { reviewers?: Reviewers | undefined; quorum?: number | undefined; stages?: ReviewStage[] | null | undefined };

/**
 * A policy as the service keeps it: `stages` null for one set of reviewers, and `reviewers` and
 * `quorum` always there, with stages stage 1's: who decides a new request first.
 */
type WithDecisionRules<Document extends DecisionRulesInput> = Omit<Document, keyof DecisionRulesInput> & {
  reviewers: Reviewers;
  quorum: number;
  stages: ReviewStage[] | null;
};

/** Stages replace reviewers and quorum: a document giving both is refused, naming `stages`. */
function withDecisionRules<Document extends DecisionRulesInput>(document: Document, context: z.RefinementCtx): WithDecisionRules<Document> {
  const { reviewers, quorum, stages, ...rest } = document;
  if (!stages) return { ...rest, reviewers: reviewers ?? DEFAULT_REVIEWERS, quorum: quorum ?? 1, stages: null };
  if (reviewers !== undefined || quorum !== undefined) {
    context.addIssue({
      code: 'custom',
      path: ['stages'],
      message: `stages replace ${reviewers !== undefined ? 'reviewers' : 'quorum'}: give each stage its reviewers and quorum, and leave out the top-level reviewers and quorum`,
    });
    return z.NEVER;
  }
  return { ...rest, reviewers: stages[0]!.reviewers, quorum: stages[0]!.quorum, stages };
}

const shadowDocumentSchema = policyFields.transform(withDecisionRules);

/** What a policy asks of the time after creation: reminders, standing approvals. A shadow has none. */
const followUpFields = {
  remindAfterSeconds: z.number().int().min(1).max(MAX_TIMEOUT_SECONDS).nullable().default(null).meta({
    description:
      'Seconds after a request (or its revision) is made at which the reviewers who have not voted are reminded on their channels; none when null.',
  }),
  standingApproval: z
    .strictObject({
      maxSeconds: z
        .number()
        .int()
        .min(60)
        .max(MAX_STANDING_SECONDS)
        .meta({ description: 'The longest a reviewer may approve "the same again" for (60 s to 24 h).' }),
    })
    .nullable()
    .default(null)
    .meta({
      description:
        'Lets a reviewer approving a request (needing one approval) approve identical later requests for up to maxSeconds; see docs/policies.md#standing-approvals. None when null.',
    }),
  remindEverySeconds: z.number().int().min(1).max(MAX_TIMEOUT_SECONDS).nullable().default(null).meta({
    description: 'Seconds between further reminders, until the request is settled or expires; one reminder only when null.',
  }),
};

export const policyDocumentSchema = policyFields
  .extend({
    ...followUpFields,
    shadow: shadowDocumentSchema.nullable().default(null).meta({
      description:
        'A draft evaluated beside this policy at every creation, its outcome recorded, never deciding; see GET /v1/policies/{key}/shadow.',
    }),
  })
  .strict()
  .transform(withDecisionRules)
  .meta({ id: 'PolicyDocument' });
export type PolicyDocument = z.output<typeof policyDocumentSchema>;
export type PolicyOutcome = PolicyDocument['defaultOutcome'];

/** A policy document as the API shows it: with stages, no top-level reviewers and quorum (docs/policies.md#stages). */
const publicPolicyFields = policyFields.extend({ stages: stagesSchema.nullable() });
const publicFollowUpFields = z.object(followUpFields);
export type PublicPolicyDocument = z.output<typeof publicPolicyFields> &
  z.output<typeof publicFollowUpFields> & { shadow: z.output<typeof publicPolicyFields> | null };

/** What the API shows of a policy the service keeps: its stages, or its reviewers and quorum. */
export function publicPolicyDocument(document: PolicyDocument): PublicPolicyDocument {
  const shown = <Kept extends WithDecisionRules<DecisionRulesInput>>({ reviewers, quorum, ...rest }: Kept) =>
    rest.stages ? rest : { ...rest, reviewers, quorum };
  return { ...shown(document), shadow: document.shadow && shown(document.shadow) };
}

export const policyViewSchema = publicPolicyFields
  .extend({
    ...followUpFields,
    shadow: publicPolicyFields.nullable(),
    key: z.string(),
    version: z.number().int().min(1).meta({ description: 'Counts every PUT under this key, from 1, never reused (also after a DELETE).' }),
    createdAt: z.iso.datetime(),
    updatedAt: z.iso.datetime(),
  })
  .meta({ id: 'Policy' });
export type PolicyView = z.output<typeof policyViewSchema>;

/** One version of a policy (docs/policies.md#versions): the policy as that PUT stored it, and who stored it. */
export const policyVersionViewSchema = policyViewSchema
  .extend({
    changedBy: z
      .object({ type: z.enum(['api_key', 'user', 'system']), id: z.string(), email: z.string().optional() })
      .meta({ description: 'Who stored this version: an API key, a member, or the system.' }),
  })
  .meta({ id: 'PolicyVersion' });
export type PolicyVersionView = z.output<typeof policyVersionViewSchema>;

export const policyVersionListSchema = z
  .object({
    versions: z.array(policyVersionViewSchema).meta({ description: 'Newest first.' }),
    nextCursor: z.string().nullable().meta({ description: 'Pass as `cursor` for the next page; null on the last page.' }),
  })
  .meta({ id: 'PolicyVersionList' });

/** A version number from the query string. */
const versionNumber = z
  .string()
  .regex(/^[1-9]\d{0,8}$/, 'version must be a positive integer')
  .transform(Number);

/** GET /v1/policies/:key: the current policy, or the version named. */
export const policyReadQuerySchema = z.strictObject({
  version: versionNumber.optional().meta({ description: 'A version of the policy to read instead of the current one.' }),
});
export type PolicyReadQuery = z.output<typeof policyReadQuerySchema>;

/** GET /v1/policies/:key/versions: newest first, a page at a time. */
export const policyVersionListQuerySchema = z.strictObject({
  limit: pageLimitSchema,
  cursor: storableString('cursor').min(1).max(100).optional().meta({ description: 'Opaque: the `nextCursor` of the previous page.' }),
});
export type PolicyVersionListQuery = z.output<typeof policyVersionListQuerySchema>;

export const policyListSchema = z
  .object({
    policies: z.array(policyViewSchema),
    nextCursor: z.string().nullable().meta({ description: 'Pass as `cursor` for the next page; null on the last page.' }),
  })
  .meta({ id: 'PolicyList' });

/** GET /v1/policies: by key, a page at a time (docs/policies.md). */
export const policyListQuerySchema = z.strictObject({
  limit: pageLimitSchema,
  // A key is at most 200 characters of up to 4 bytes each, and the cursor is its base64.
  cursor: storableString('cursor').min(1).max(1200).optional().meta({ description: 'Opaque: the `nextCursor` of the previous page.' }),
});
export type PolicyListQuery = z.output<typeof policyListQuerySchema>;

export const policyKeyParamsSchema = z.object({ key: policyKey('key') });

/** A request to try against a policy, stored or drafted, without creating anything (see docs/policies.md). */
export const policyEvaluationInputSchema = z
  .strictObject({
    action: storableString('action').min(1).max(200),
    payload: jsonObject('payload'),
    agent: storableString('agent').min(1).max(200).nullish(),
    context: jsonObject('context').nullish(),
    policy: policyDocumentSchema.optional().meta({ description: 'A draft to evaluate instead of the stored policy.' }),
  })
  .meta({ id: 'PolicyEvaluationInput' });
export type PolicyEvaluationInput = z.output<typeof policyEvaluationInputSchema>;

export const policyEvaluationSchema = z
  .object({
    outcome: z.enum(['allow', 'review']),
    matchedRule: z.number().int().nullable().meta({ description: 'The rule that matched or failed; null when the default applied.' }),
    error: z.string().nullable().meta({ description: 'Why evaluation failed closed to review, if it did.' }),
  })
  .meta({ id: 'PolicyEvaluation' });
export type PolicyEvaluation = z.output<typeof policyEvaluationSchema>;

/** The most stored requests one replay evaluates (docs/policies.md#replay). */
export const MAX_REPLAY_REQUESTS = 10_000;

/** A replay of a draft, or of the current version, against the stored requests of a key. */
export const policyReplayInputSchema = z
  .strictObject({
    policy: policyDocumentSchema.optional().meta({ description: 'A draft to replay instead of the current version.' }),
    from: storableInstant('from').optional().meta({ description: 'Requests created at or after (ISO 8601).' }),
    to: storableInstant('to').optional().meta({ description: 'Requests created at or before (ISO 8601).' }),
    limit: z
      .number()
      .int()
      .min(1)
      .max(MAX_REPLAY_REQUESTS)
      .default(1000)
      .meta({ description: `The newest requests to replay, 1 to ${formatCount(MAX_REPLAY_REQUESTS)}.` }),
  })
  .refine((input) => !input.from || !input.to || input.from <= input.to, { path: ['to'], message: 'to must not be before from' })
  .meta({ id: 'PolicyReplayInput' });
export type PolicyReplayInput = z.output<typeof policyReplayInputSchema>;

const outcome = z.enum(['allow', 'review', 'reject']);

export const policyReplaySchema = z
  .object({
    evaluated: z.number().int().meta({ description: 'Stored requests evaluated.' }),
    unchanged: z.number().int().meta({ description: 'Those whose outcome would be the one recorded.' }),
    changed: z.array(z.object({ from: outcome, to: outcome, count: z.number().int() })),
    examples: z
      .array(
        z.object({
          approvalId: z.uuid(),
          was: outcome,
          would: outcome,
          matchedRule: z.number().int().nullable(),
          error: z.string().nullable().meta({ description: 'Why the evaluation failed closed to review, if it did.' }),
        }),
      )
      .meta({ description: 'Up to 20 requests per change, newest first.' }),
  })
  .meta({ id: 'PolicyReplay' });
export type PolicyReplay = z.output<typeof policyReplaySchema>;

const liveOutcome = z.enum(['allow', 'review']);

/** The requests a shadow summary names of each disagreement (docs/policies.md#shadow-policies). */
export const MAX_SHADOW_EXAMPLES = 20;

/** GET /v1/policies/:key/shadow: how the current shadow compares with the live policy. */
export const shadowSummarySchema = z
  .object({
    since: z.iso.datetime().nullable().meta({ description: 'When the current shadow was set; null without one.' }),
    evaluated: z.number().int().meta({ description: 'Requests created since, which the shadow evaluated.' }),
    agreed: z.number().int(),
    disagreed: z.array(
      z.object({
        live: liveOutcome,
        shadow: liveOutcome,
        count: z.number().int(),
        examples: z
          .array(z.object({ approvalId: z.uuid(), createdAt: z.iso.datetime() }))
          .meta({ description: `Up to ${MAX_SHADOW_EXAMPLES} of these requests, newest first.` }),
      }),
    ),
  })
  .meta({ id: 'ShadowSummary' });
export type ShadowSummary = z.output<typeof shadowSummarySchema>;
