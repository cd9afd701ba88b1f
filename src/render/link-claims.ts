// Text that reads as an address: a URL with a scheme, or a host name with a dot and a top-level domain.
const LOOKS_LIKE_ADDRESS = /[a-z][a-z0-9+.-]*:\/\/\S|(?:^|[^\w.-])(?:[a-z0-9-]+\.)+[a-z]{2,}(?![\w-])/i;

/** The part of an address a reader compares by eye: no scheme, no `www.`, no trailing slash, any case. */
function comparable(address: string): string {
  return address
    .trim()
    .toLowerCase()
    .replace(/^[a-z][a-z0-9+.-]*:(?:\/\/)?/, '')
    .replace(/^www\./, '')
    .replace(/\/+$/, '');
}

/**
 * Whether a link's visible text names an address other than where it goes
 * (`[https://good.example](https://evil.example)`): a reader trusts the text,
 * so the real target has to be shown beside it.
 */
export function claimsOtherTarget(visible: string, href: string): boolean {
  return visible !== href && LOOKS_LIKE_ADDRESS.test(visible) && comparable(visible) !== comparable(href);
}
