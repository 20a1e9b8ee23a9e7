import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { generate } from "selfsigned";

/** A private CA and a server certificate it signed for 127.0.0.1, written as PEM files into `dir`. */
export async function loopbackCertificates(dir: string): Promise<{ caFile: string; certFile: string; keyFile: string }> {
  const ca = await generate([{ name: "commonName", value: "egress-agent test CA" }], {
    keyType: "ec",
    algorithm: "sha256",
    extensions: [
      { name: "basicConstraints", cA: true, critical: true },
      { name: "keyUsage", keyCertSign: true, cRLSign: true, critical: true },
    ],
  });
  const server = await generate([{ name: "commonName", value: "beacon.test" }], {
    keyType: "ec",
    algorithm: "sha256",
    ca: { key: ca.private, cert: ca.cert },
    extensions: [
      { name: "basicConstraints", cA: false },
      { name: "keyUsage", digitalSignature: true, critical: true },
      { name: "extKeyUsage", serverAuth: true },
      { name: "subjectAltName", altNames: [{ type: 7, ip: "127.0.0.1" }] },
    ],
  });
  const files = { caFile: join(dir, "ca.pem"), certFile: join(dir, "beacon.pem"), keyFile: join(dir, "beacon-key.pem") };
  writeFileSync(files.caFile, ca.cert);
  writeFileSync(files.certFile, server.cert);
  writeFileSync(files.keyFile, server.private);
  return files;
}
