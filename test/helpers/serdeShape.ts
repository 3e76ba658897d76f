/**
 * Reads a JSON answer the way a strict Rust client (serde with `#[derive(Deserialize)]`) does: every
 * field that is not an `Option` must be present and of its type, an `Option` may be missing or
 * null but otherwise must be of its type, an enum takes only its variants, and unknown fields are
 * ignored. Returns where the answer would fail to parse; empty when it parses.
 */
export type Shape =
  | 'f64'
  | 'string'
  | 'bool'
  | 'any'
  | { option: Shape }
  | { variants: readonly string[] }
  | { vec: Shape }
  | { struct: Record<string, Shape> };

export const option = (shape: Shape): Shape => ({ option: shape });
export const variants = (...names: string[]): Shape => ({ variants: names });
export const vec = (shape: Shape): Shape => ({ vec: shape });
export const struct = (fields: Record<string, Shape>): Shape => ({ struct: fields });

export function serdeErrors(value: unknown, shape: Shape, at = '$'): string[] {
  if (typeof shape === 'object' && 'option' in shape) return value === undefined || value === null ? [] : serdeErrors(value, shape.option, at);
  if (value === undefined) return [`${at}: missing field`];
  if (shape === 'any') return [];
  if (shape === 'f64') return typeof value === 'number' ? [] : [`${at}: invalid type ${typeOf(value)}, expected f64`];
  if (shape === 'string') return typeof value === 'string' ? [] : [`${at}: invalid type ${typeOf(value)}, expected a string`];
  if (shape === 'bool') return typeof value === 'boolean' ? [] : [`${at}: invalid type ${typeOf(value)}, expected a boolean`];
  if ('variants' in shape) {
    return typeof value === 'string' && shape.variants.includes(value) ? [] : [`${at}: unknown variant ${JSON.stringify(value)}, expected one of ${shape.variants.join(', ')}`];
  }
  if ('vec' in shape) {
    if (!Array.isArray(value)) return [`${at}: invalid type ${typeOf(value)}, expected a sequence`];
    return value.flatMap((item, i) => serdeErrors(item, shape.vec, `${at}[${i}]`));
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return [`${at}: invalid type ${typeOf(value)}, expected a map`];
  const object = value as Record<string, unknown>;
  return Object.entries(shape.struct).flatMap(([name, field]) => serdeErrors(object[name], field, `${at}.${name}`));
}

function typeOf(value: unknown): string {
  return value === null ? 'null' : Array.isArray(value) ? 'sequence' : typeof value;
}
