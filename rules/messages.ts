// The contract's error texts come from the spec's `x-messages` (decision KIT-20): a template with `{name}`
// where a value of the request or a limit goes, and `{name:binary}` for a byte count in the binary units the
// contract words its limits in (decision GAP-06: "25 MB" is 26214400 bytes). Service and kit fill them here,
// so a text edited in the spec and regenerated is the text answered, with no copy in a handler.

export type MessageValues = Readonly<Record<string, string | number>>;

/** A byte count as the contract words it: `25 MB`, `512 KB`, or `N bytes` when it is neither. */
export function binaryUnits(bytes: number): string {
  if (bytes > 0 && bytes % 1_048_576 === 0) return `${bytes / 1_048_576} MB`;
  if (bytes > 0 && bytes % 1024 === 0) return `${bytes / 1024} KB`;
  return `${bytes} bytes`;
}

/**
 * Fills a spec message. A placeholder without a value is a mismatch between the spec and the caller (a
 * renamed placeholder): it throws, so a test that reaches the message names it rather than answering `{x}`.
 */
export function fillMessage(template: string, values: MessageValues = {}): string {
  return template.replace(/\{([a-z_]+)(?::(binary))?\}/g, (_whole, name: string, unit: string | undefined) => {
    const value = values[name];
    if (value === undefined) throw new Error(`the spec message ${JSON.stringify(template)} needs a value for {${name}}`);
    return unit === 'binary' ? binaryUnits(Number(value)) : String(value);
  });
}
