import { readdir, readFile, readlink } from "node:fs/promises";

/** The TCP ports a process listens on, from /proc (Linux): its socket inodes matched against /proc/net/tcp and tcp6. */
export async function listeningPorts(pid: number): Promise<number[]> {
  const inodes = new Set<string>();
  for (const fd of await readdir(`/proc/${pid}/fd`)) {
    const target = await readlink(`/proc/${pid}/fd/${fd}`).catch(() => "");
    const inode = /^socket:\[(\d+)\]$/.exec(target)?.[1];
    if (inode) inodes.add(inode);
  }
  const ports: number[] = [];
  for (const table of ["/proc/net/tcp", "/proc/net/tcp6"]) {
    const text = await readFile(table, "utf8").catch(() => "");
    for (const line of text.split("\n").slice(1)) {
      const fields = line.trim().split(/\s+/);
      // local_address is "hexaddr:hexport", st 0A is LISTEN, inode is the 10th field.
      if (fields.length > 9 && fields[3] === "0A" && inodes.has(fields[9]!)) ports.push(parseInt(fields[1]!.split(":")[1]!, 16));
    }
  }
  return ports.sort((a, b) => a - b);
}
