import { Type, type Static } from 'typebox';
import { GameId } from '../games/schemas.js';
import { ROLES } from './roles.js';
import { MIN_PASSWORD_LENGTH } from './password-rules.js';

export const RoleName = Type.Enum([...ROLES], { description: 'operators.md 1: viewer < support < developer < finance < admin < owner' });
const Games = Type.Array(GameId, { minItems: 1, maxItems: 1000, uniqueItems: true, description: 'the games the account may see; absent or null: every game' });
const Email = Type.String({ minLength: 3, maxLength: 254, pattern: '^[^\\s@]+@[^\\s@]+$' });
const Name = Type.String({ minLength: 1, maxLength: 128 });
const Password = Type.String({ minLength: MIN_PASSWORD_LENGTH, maxLength: 1024, description: `at least ${MIN_PASSWORD_LENGTH} characters` });
const TotpCode = Type.String({ pattern: '^[0-9]{6}$' });
const Nullable = <T extends Parameters<typeof Type.Union>[0][number]>(t: T) => Type.Union([t, Type.Null()]);

export const Operator = Type.Object({
  operator_id: Type.String(),
  email: Type.String(),
  name: Type.String(),
  role: RoleName,
  games: Nullable(Type.Array(Type.String())),
  status: Type.Enum(['invited', 'active', 'disabled']),
  totp_enabled: Type.Boolean(),
  created_at: Type.Integer({ description: 'Unix ms' }),
  updated_at: Type.Integer({ description: 'Unix ms' }),
});
export type Operator = Static<typeof Operator>;

export const Invitation = Type.Object({
  invitation_url: Type.String({ description: '/console/invite/<token> on PUBLIC_BASE_URL: shown once, works once' }),
  invitation_token: Type.String(),
  expires_at: Type.Integer({ description: 'Unix ms (72 h after it was made)' }),
});

export const OperatorWithInvitation = Type.Intersect([Operator, Type.Object({ invitation: Invitation })]);

export const CreateOperatorBody = Type.Object({ email: Email, name: Name, role: RoleName, games: Type.Optional(Nullable(Games)) }, { additionalProperties: false });
export type CreateOperatorBody = Static<typeof CreateOperatorBody>;

export const PatchOperatorBody = Type.Object(
  { name: Type.Optional(Name), role: Type.Optional(RoleName), games: Type.Optional(Nullable(Games)), disabled: Type.Optional(Type.Boolean()) },
  { additionalProperties: false },
);
export type PatchOperatorBody = Static<typeof PatchOperatorBody>;

export const OperatorParams = Type.Object({ operator_id: Type.String({ minLength: 1, maxLength: 64 }) });
export const InvitationParams = Type.Object({ token: Type.String({ minLength: 1, maxLength: 128 }) });
export const AcceptInvitationBody = Type.Object({ password: Password }, { additionalProperties: false });
export const InvitationInfo = Type.Object({ email: Type.String(), name: Type.String(), expires_at: Type.Integer() });

export const SignInBody = Type.Object(
  { email: Type.String({ minLength: 1, maxLength: 254 }), password: Type.String({ minLength: 1, maxLength: 1024 }), totp: Type.Optional(TotpCode) },
  { additionalProperties: false },
);
export type SignInBody = Static<typeof SignInBody>;

export const Me = Type.Object({
  kind: Type.Enum(['account', 'api_key', 'token'], { description: 'how the request was authenticated' }),
  actor: Type.String({ description: 'what the audit log records for this caller' }),
  role: RoleName,
  games: Nullable(Type.Array(Type.String())),
  operator: Nullable(Operator),
  session_id: Nullable(Type.String()),
  csrf_token: Nullable(Type.String({ description: 'send as X-CSRF-Token with every write made with the session cookie' })),
});

export const SignedIn = Type.Object({ operator: Operator, session_id: Type.String(), csrf_token: Type.String() });

export const SessionView = Type.Object({
  session_id: Type.String(),
  created_at: Type.Integer(),
  last_seen_at: Type.Integer(),
  address: Type.String(),
  user_agent: Type.String(),
  method: Type.Enum(['password', 'oidc']),
  current: Type.Boolean(),
});
export const SessionParams = Type.Object({ session_id: Type.String({ minLength: 1, maxLength: 64 }) });

export const PasswordBody = Type.Object({ current_password: Type.String({ minLength: 1, maxLength: 1024 }), new_password: Password }, { additionalProperties: false });
export const TotpSetup = Type.Object({ secret: Type.String({ description: 'base32' }), otpauth_url: Type.String() });
export const TotpCodeBody = Type.Object({ code: TotpCode }, { additionalProperties: false });

export const ApiKey = Type.Object({
  key_id: Type.String(),
  name: Type.String(),
  role: RoleName,
  games: Nullable(Type.Array(Type.String())),
  created_by: Type.String(),
  created_at: Type.Integer(),
  expires_at: Nullable(Type.Integer()),
  last_used_at: Nullable(Type.Integer()),
  revoked_at: Nullable(Type.Integer()),
});
export type ApiKey = Static<typeof ApiKey>;
export const NewApiKey = Type.Intersect([ApiKey, Type.Object({ api_key: Type.String({ description: 'ak_...: shown once, stored only hashed' }) })]);
export const CreateApiKeyBody = Type.Object(
  { name: Name, role: RoleName, games: Type.Optional(Nullable(Games)), expires_at: Type.Optional(Nullable(Type.Integer({ minimum: 0, description: 'Unix ms' }))) },
  { additionalProperties: false },
);
export type CreateApiKeyBody = Static<typeof CreateApiKeyBody>;
export const ApiKeyParams = Type.Object({ key_id: Type.String({ minLength: 1, maxLength: 64 }) });

export const SignInOptions = Type.Object({
  password: Type.Boolean({ description: 'email and password (and TOTP when enrolled): always on' }),
  oidc: Nullable(
    Type.Object({
      provider: Type.String({ description: "the provider's name for the button: OIDC_DISPLAY_NAME, else the host of OIDC_ISSUER" }),
      start_url: Type.String({ description: 'where the button goes: GET /admin/v1/oidc/start' }),
    }),
  ),
  admin_token: Type.Boolean({ description: 'ADMIN_TOKEN is taken (false with ADMIN_TOKEN_DISABLED=1)' }),
});
export type SignInOptions = Static<typeof SignInOptions>;
