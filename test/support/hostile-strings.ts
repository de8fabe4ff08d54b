import fc from "fast-check";

/** Any UTF-16 code unit, lone surrogates included. */
const codeUnit = fc.integer({ min: 0, max: 0xffff }).map((unit) => String.fromCharCode(unit));

/** Short text of any code units or any bytes, or one of `cases`: what hostile or careless clients send. */
export function hostileString(cases: readonly string[]): fc.Arbitrary<string> {
  return fc.oneof(
    fc.string({ unit: codeUnit, maxLength: 40 }),
    fc.string({ unit: "binary", maxLength: 40 }),
    fc.constantFrom(...cases),
  );
}
