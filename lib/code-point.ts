/** How a message names a character without printing it: `U+0000`, `U+FEFF`, `U+1F600`. */
export const codePoint = (char: string): string =>
  `U+${char.codePointAt(0)!.toString(16).toUpperCase().padStart(4, "0")}`;
