import { Type, type Static } from 'typebox';

/** rest-interface 2.4: enter-game and leave-game share the shape. */
export const SessionReportBody = Type.Object({
  combo_id: Type.String({ minLength: 1, maxLength: 64 }),
  session_id: Type.String({ minLength: 1, maxLength: 64 }),
});
export type SessionReportBody = Static<typeof SessionReportBody>;
