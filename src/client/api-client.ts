import type {
  ApiKeyCreated,
  ApiKeyCreateInput,
  ApiKeyList,
  ApprovalCreateInput,
  ApprovalList,
  ApprovalListQuery,
  ApprovalView,
  AuditExportInput,
  AuditExportView,
  AuditPage,
  AuditQuery,
  DecisionInput,
  InviteAcceptInput,
  InvitePreview,
  InvitePreviewInput,
  MemberCreated,
  MemberCreateInput,
  MemberList,
  MemberSelfUpdateInput,
  DelegationInput,
  MemberUpdateInput,
  MemberView,
  PolicyDocumentInput,
  PolicyEvaluation,
  PolicyEvaluationInput,
  PolicyList,
  PolicyListQuery,
  PolicyReplay,
  PolicyReplayInput,
  PolicyVersionList,
  PolicyVersionListQuery,
  PolicyView,
  ShadowSummary,
  RevisionInput,
  SignedReceipt,
  Problem,
  SessionView,
  SignInInput,
  SlackLinkInput,
  SlackLinkPreview,
  TeamsLinkInput,
  PushSettings,
  PushSubscriptionInput,
  PushSubscribed,
  WebhookCreateInput,
  WebhookDeliveryList,
  WebhookDeliveryView,
  WebhookEndpointList,
  WebhookEndpointView,
  WebhookEndpointWithSecret,
  WebhookUpdateInput,
} from './api-types.js';
import { ApiError, toApiError } from './api-error.js';
import type { PublishedKey } from '../modules/audit/checkpoint-signing.js';

export { ApiError };

export interface ApiClientOptions {
  /** Where the API is served; the empty default is the page's own origin. */
  baseUrl?: string;
  /** An API key, sent as a bearer token. Without one, the browser's session cookie authenticates. */
  apiKey?: string;
  fetch?: typeof fetch;
}

type QueryValues = Record<string, string | number | boolean | undefined>;

interface RequestOptions {
  body?: unknown;
  query?: QueryValues;
  signal?: AbortSignal;
}

const segment = encodeURIComponent;

/**
 * A typed client of the /v1 API. With a session it keeps the CSRF token that sign-in (or reading
 * the session) returned, and sends it on every write, as docs/members-and-channels.md says.
 */
export function createApiClient({ baseUrl = '', apiKey, fetch: fetchImpl = globalThis.fetch.bind(globalThis) }: ApiClientOptions = {}) {
  let csrfToken: string | null = null;

  const url = (path: string, query: QueryValues = {}): string => {
    const params = new URLSearchParams();
    for (const [name, value] of Object.entries(query)) if (value !== undefined && value !== '') params.set(name, String(value));
    const search = params.toString();
    return `${baseUrl}${path}${search ? `?${search}` : ''}`;
  };

  async function request<T>(method: string, path: string, { body, query, signal }: RequestOptions = {}): Promise<T> {
    const headers: Record<string, string> = { accept: 'application/json' };
    if (body !== undefined) headers['content-type'] = 'application/json';
    if (apiKey) headers.authorization = `Bearer ${apiKey}`;
    else if (csrfToken && method !== 'GET') headers['x-csrf-token'] = csrfToken;
    const response = await fetchImpl(url(path, query), {
      method,
      headers,
      credentials: 'same-origin',
      signal,
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
    if (!response.ok) throw await toApiError(response);
    if (response.status === 204) return undefined as T;
    return (await response.json()) as T;
  }

  const remember = (session: SessionView): SessionView => {
    csrfToken = session.csrfToken;
    return session;
  };

  return {
    /** An absolute URL of the API, for links the browser follows itself (downloads, event streams). */
    url,

    session: {
      signIn: async (input: SignInInput) => remember(await request<SessionView>('POST', '/v1/session', { body: input })),
      current: async () => remember(await request<SessionView>('GET', '/v1/session')),
      signOut: async () => {
        await request<void>('DELETE', '/v1/session');
        csrfToken = null;
      },
      /** What a link sent in Slack would link to the signed-in member (nothing is used up), and linking it. */
      previewSlackLink: (input: SlackLinkInput) => request<SlackLinkPreview>('POST', '/v1/session/slack-link/preview', { body: input }),
      linkSlack: (input: SlackLinkInput) => request<void>('POST', '/v1/session/slack-link', { body: input }),
      /** Links the Teams account of a link shown on a Teams card to the signed-in member. */
      linkTeams: (input: TeamsLinkInput) => request<void>('POST', '/v1/session/teams-link', { body: input }),
      /** Web Push on this device: the server's VAPID key, and turning notifications on or off. */
      pushSettings: () => request<PushSettings>('GET', '/v1/session/push'),
      addPushDevice: (input: PushSubscriptionInput) => request<PushSubscribed>('POST', '/v1/session/push-subscriptions', { body: input }),
      removePushDevice: (endpoint: string) => request<void>('DELETE', '/v1/session/push-subscriptions', { body: { endpoint } }),
    },
    invites: {
      preview: (input: InvitePreviewInput) => request<InvitePreview>('POST', '/v1/invites/preview', { body: input }),
      accept: async (input: InviteAcceptInput) => remember(await request<SessionView>('POST', '/v1/invites/accept', { body: input })),
    },
    approvals: {
      list: (query: ApprovalListQuery = {}) => request<ApprovalList>('GET', '/v1/approvals', { query }),
      get: (id: string, { wait, signal }: { wait?: number; signal?: AbortSignal } = {}) =>
        request<ApprovalView>('GET', `/v1/approvals/${segment(id)}`, { query: { wait }, signal }),
      create: (input: ApprovalCreateInput, { signal }: { signal?: AbortSignal } = {}) =>
        request<ApprovalView>('POST', '/v1/approvals', { body: input, signal }),
      decide: (id: string, decision: DecisionInput) =>
        request<ApprovalView>('POST', `/v1/approvals/${segment(id)}/decision`, { body: decision }),
      revise: (id: string, input: RevisionInput, { signal }: { signal?: AbortSignal } = {}) =>
        request<ApprovalView>('POST', `/v1/approvals/${segment(id)}/revisions`, { body: input, signal }),
      receipt: (id: string) => request<SignedReceipt>('GET', `/v1/approvals/${segment(id)}/receipt`),
    },
    audit: {
      page: (query: Omit<AuditQuery, 'format'> = {}) => request<AuditPage>('GET', '/v1/audit', { query }),
      createExport: (filters: AuditExportInput = {}) => request<AuditExportView>('POST', '/v1/audit/exports', { body: filters }),
      getExport: (id: string) => request<AuditExportView>('GET', `/v1/audit/exports/${segment(id)}`),
      /** The public keys that sign checkpoints and receipts, current and retired (no authentication needed). */
      keys: () => request<{ keys: PublishedKey[] }>('GET', '/v1/audit/keys'),
    },
    policies: {
      /** A page of policies by key; pass `nextCursor` back as `cursor` for the next. */
      list: (query: PolicyListQuery = {}) => request<PolicyList>('GET', '/v1/policies', { query }),
      get: (key: string) => request<PolicyView>('GET', `/v1/policies/${segment(key)}`),
      put: (key: string, document: PolicyDocumentInput) => request<PolicyView>('PUT', `/v1/policies/${segment(key)}`, { body: document }),
      delete: (key: string) => request<void>('DELETE', `/v1/policies/${segment(key)}`),
      /** What the stored policy, or the draft in `input.policy`, would decide for a request; nothing is created. */
      evaluate: (key: string, input: PolicyEvaluationInput) =>
        request<PolicyEvaluation>('POST', `/v1/policies/${segment(key)}/evaluate`, { body: input }),
      /** The key's versions, newest first, also after a DELETE; pass `nextCursor` back as `cursor` for the next page. */
      versions: (key: string, query: PolicyVersionListQuery = {}) =>
        request<PolicyVersionList>('GET', `/v1/policies/${segment(key)}/versions`, { query }),
      /** What the draft in `input.policy` (or the current version) would have decided for the key's stored requests; nothing changes. */
      replay: (key: string, input: PolicyReplayInput = {}) =>
        request<PolicyReplay>('POST', `/v1/policies/${segment(key)}/replay`, { body: input }),
      /** How the policy's shadow compares with it since the shadow was set. */
      shadow: (key: string) => request<ShadowSummary>('GET', `/v1/policies/${segment(key)}/shadow`),
    },
    webhooks: {
      list: () => request<WebhookEndpointList>('GET', '/v1/webhooks'),
      get: (id: string) => request<WebhookEndpointView>('GET', `/v1/webhooks/${segment(id)}`),
      create: (input: WebhookCreateInput) => request<WebhookEndpointWithSecret>('POST', '/v1/webhooks', { body: input }),
      update: (id: string, patch: WebhookUpdateInput) =>
        request<WebhookEndpointView>('PATCH', `/v1/webhooks/${segment(id)}`, { body: patch }),
      delete: (id: string) => request<void>('DELETE', `/v1/webhooks/${segment(id)}`),
      rotateSecret: (id: string) => request<WebhookEndpointWithSecret>('POST', `/v1/webhooks/${segment(id)}/rotate-secret`),
      deliveries: (id: string, query: { limit?: number } = {}) =>
        request<WebhookDeliveryList>('GET', `/v1/webhooks/${segment(id)}/deliveries`, { query }),
      redeliver: (id: string, deliveryId: string) =>
        request<WebhookDeliveryView>('POST', `/v1/webhooks/${segment(id)}/deliveries/${segment(deliveryId)}/redeliver`),
    },
    keys: {
      list: () => request<ApiKeyList>('GET', '/v1/keys'),
      create: (input: ApiKeyCreateInput) => request<ApiKeyCreated>('POST', '/v1/keys', { body: input }),
      revoke: (id: string) => request<void>('DELETE', `/v1/keys/${segment(id)}`),
    },
    members: {
      list: () => request<MemberList>('GET', '/v1/members'),
      create: (input: MemberCreateInput) => request<MemberCreated>('POST', '/v1/members', { body: input }),
      update: (id: string, patch: MemberUpdateInput) => request<MemberView>('PATCH', `/v1/members/${segment(id)}`, { body: patch }),
      remove: (id: string) => request<void>('DELETE', `/v1/members/${segment(id)}`),
      updateSelf: (patch: MemberSelfUpdateInput) => request<MemberView>('PATCH', '/v1/members/me', { body: patch }),
      /** Names who decides in your place until `endsAt`; `null` ends it. */
      delegate: (delegation: DelegationInput | null) =>
        delegation
          ? request<MemberView>('PUT', '/v1/members/me/delegation', { body: delegation })
          : request<MemberView>('DELETE', '/v1/members/me/delegation'),
    },
  };
}

export type ApiClient = ReturnType<typeof createApiClient>;
