/**
 * The origin of the links written into a project's mail: its verified
 * tracking domain, on the scheme of PUBLIC_URL (contract "Tracking domain"),
 * or PUBLIC_URL itself.
 */
export function linkBaseUrl(publicUrl: string, trackingDomain: string | null): string {
  if (!trackingDomain) return publicUrl;
  return `${publicUrl.startsWith('http://') ? 'http' : 'https'}://${trackingDomain}`;
}
