import { MIN_PASSWORD_LENGTH } from '../../src/operators/password-rules';
import { Field } from './ui';

/** Throws what is wrong with a new password and its repetition, before the API is asked. */
export function checkNewPassword(password: string, again: string): void {
  if (password.length < MIN_PASSWORD_LENGTH) throw new Error(`The password must be at least ${MIN_PASSWORD_LENGTH} characters long`);
  if (password !== again) throw new Error('The two passwords differ');
}

/** "New password" and "Repeat the password", as the invitation page and the account page ask them. */
export function NewPasswordFields({ password, again, onPassword, onAgain, autoFocus }: { password: string; again: string; onPassword: (v: string) => void; onAgain: (v: string) => void; autoFocus?: boolean }) {
  return (
    <>
      <Field label="New password" hint={`at least ${MIN_PASSWORD_LENGTH} characters`}>
        <input type="password" name="new-password" autoComplete="new-password" value={password} onChange={(e) => onPassword(e.target.value)} autoFocus={autoFocus} />
      </Field>
      <Field label="Repeat the password">
        <input type="password" name="repeat-password" autoComplete="new-password" value={again} onChange={(e) => onAgain(e.target.value)} />
      </Field>
    </>
  );
}
