/** The SecretBox of provider credentials (its own key: a label of its own). */
export const PROVIDER_CREDENTIALS_BOX = Symbol('PROVIDER_CREDENTIALS_BOX');
export const PROVIDER_CREDENTIALS_BOX_LABEL = 'provider-credentials';
