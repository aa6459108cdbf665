/** The SecretBox of provider credentials (its own key: a label of its own). */
export const PROVIDER_CREDENTIALS_BOX = Symbol('PROVIDER_CREDENTIALS_BOX');
export const PROVIDER_CREDENTIALS_BOX_LABEL = 'provider-credentials';

/** A sealed box is bound to its project and provider: copied to another row, it does not open. */
export function credentialsAad(projectId: string, provider: string): string {
  return `provider-hook:${projectId}:${provider}`;
}
