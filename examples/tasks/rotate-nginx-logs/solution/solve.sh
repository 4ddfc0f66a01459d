#!/bin/bash
set -euo pipefail
cd /var/log/nginx
# taskloom:step 1 shift the archives up by one; moving 4 onto 5 drops the oldest
for n in 4 3 2 1; do
  if [ -e "access.log.$n.gz" ]; then mv -f "access.log.$n.gz" "access.log.$((n + 1)).gz"; fi
done
# taskloom:step 2 compress the live log into slot 1 and recreate it empty
owner=$(stat -c %U:%G access.log)
mode=$(stat -c %a access.log)
gzip -c access.log > access.log.1.gz
: > access.log
chown "$owner" access.log
chmod "$mode" access.log
