/**
 * Which machine an ELF file is built for, from its header: pure, for the image's check that an image of
 * one architecture holds no binary of another (a binary of the wrong machine fails only when run).
 */

/** The e_machine values of the architectures the image is built for, by their OCI names. */
export const ELF_MACHINES = { amd64: 62, arm64: 183 } as const;

/** The architecture names of ELF_MACHINES' values, and `machine N` for any other. */
export function machineName(machine: number): string {
  const found = Object.entries(ELF_MACHINES).find(([, m]) => m === machine);
  return found ? found[0] : `machine ${machine}`;
}

/**
 * A file's e_machine, or undefined when it is not ELF (no magic, or too short to hold the field). The
 * field is 2 bytes at offset 18 in the byte order e_ident[EI_DATA] names (1 little-endian, 2 big-endian).
 */
export function elfMachine(head: Uint8Array): number | undefined {
  if (head.length < 20) return undefined;
  if (head[0] !== 0x7f || head[1] !== 0x45 || head[2] !== 0x4c || head[3] !== 0x46) return undefined;
  const view = new DataView(head.buffer, head.byteOffset, head.byteLength);
  if (head[5] === 1) return view.getUint16(18, true);
  if (head[5] === 2) return view.getUint16(18, false);
  throw new Error(`ELF header with byte order ${head[5]}: neither little- (1) nor big-endian (2)`);
}
