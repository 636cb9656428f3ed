/**
 * Who may call a route: signed games and partners, the operator, clients holding an order
 * token, `provider`: a payment provider's callback (payments.md 4), unsigned by our scheme:
 * the route checks the provider's own signature, and its body may be other than JSON.
 */
export type AuthKind = 'game' | 'partner' | 'admin' | 'client' | 'provider' | 'none';
