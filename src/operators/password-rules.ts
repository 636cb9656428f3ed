/** The shortest password an operator account may have (operators.md 1); the console checks it too. */
export const MIN_PASSWORD_LENGTH = 12;
