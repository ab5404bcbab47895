// Starts the S3-compatible test server (s3rver, which checks SigV4 signatures) on loopback.
// Usage: node --openssl-legacy-provider serve.js --dir DIR --port-file FILE [--port N] [--access-key K --secret-key S]
//                      [--bucket NAME]...
// Port 0 picks a free port; the bound port is written to --port-file (atomically) once the
// server answers, so a starter waits for the file rather than guessing. The legacy provider:
// s3rver encrypts ListObjectsV2 continuation tokens with DES, which OpenSSL 3 keeps there.
'use strict';

const fs = require('fs');
const path = require('path');
const S3rver = require('@20minutes/s3rver');
const AWSAccount = require('@20minutes/s3rver/lib/models/account');

function parseArgs(argv) {
  const args = { port: 0, buckets: [], accessKey: 'S3RVER', secretKey: 'S3RVER' };
  for (let i = 0; i < argv.length; i += 2) {
    const [name, value] = [argv[i], argv[i + 1]];
    if (value === undefined) throw new Error(`${name}: needs a value`);
    if (name === '--dir') args.dir = value;
    else if (name === '--port-file') args.portFile = value;
    else if (name === '--port') args.port = Number(value);
    else if (name === '--access-key') args.accessKey = value;
    else if (name === '--secret-key') args.secretKey = value;
    else if (name === '--bucket') args.buckets.push(value);
    else throw new Error(`unknown option ${name}`);
  }
  if (!args.dir || !args.portFile) throw new Error('--dir and --port-file are required');
  return args;
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  // Only the key pair given here is accepted: the built-in S3RVER/S3RVER pair is revoked
  // unless it is the one asked for.
  AWSAccount.DUMMY_ACCOUNT.revokeAccessKey('S3RVER');
  AWSAccount.DUMMY_ACCOUNT.createKeyPair(args.accessKey, args.secretKey);
  const server = new S3rver({
    address: '127.0.0.1',
    port: args.port,
    directory: args.dir,
    silent: true,
    vhostBuckets: false,
    configureBuckets: args.buckets.map((name) => ({ name })),
  });
  const { port } = await server.run();
  const tmp = `${args.portFile}.tmp`;
  fs.writeFileSync(tmp, `${port}\n`);
  fs.renameSync(tmp, args.portFile);
}

main().catch((err) => {
  process.stderr.write(`serve.js: ${err.message}\n`);
  process.exit(1);
});
