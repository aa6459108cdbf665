/** Injection token of the SecretBox that seals webhook signing secrets (label "webhook-secret"). */
export const WEBHOOK_SECRET_BOX = Symbol('WEBHOOK_SECRET_BOX');
export const WEBHOOK_SECRET_BOX_LABEL = 'webhook-secret';
