#!/bin/sh
# The bootstrap Job's first step (image minio/mc), as MinIO's root: the bucket, a policy that allows
# s3://$BUCKET and nothing else, and the bucket-scoped user of storage.env with that policy. Every
# step may run again: the bucket and policy are kept or updated, the user's secret key is reset to
# storage.env's (so rotating it is: edit storage.env, re-apply, re-run this Job). Shell builtins only
# besides mc (the mc image has no grep).
set -eu
until mc alias set root "$S3_ENDPOINT" "$MINIO_ROOT_USER" "$MINIO_ROOT_PASSWORD" >/dev/null; do
  echo "waiting for MinIO at $S3_ENDPOINT"; sleep 5
done
mc mb --ignore-existing "root/$BUCKET"
printf '%s\n' '{"Version": "2012-10-17", "Statement": [' \
  "{\"Effect\": \"Allow\", \"Action\": [\"s3:GetBucketLocation\", \"s3:ListBucket\", \"s3:ListBucketMultipartUploads\"], \"Resource\": [\"arn:aws:s3:::$BUCKET\"]}," \
  "{\"Effect\": \"Allow\", \"Action\": [\"s3:GetObject\", \"s3:PutObject\", \"s3:DeleteObject\", \"s3:AbortMultipartUpload\", \"s3:ListMultipartUploadParts\"], \"Resource\": [\"arn:aws:s3:::$BUCKET/*\"]}" \
  ']}' > /tmp/bucket-policy.json
mc admin policy create root "$POLICY" /tmp/bucket-policy.json
mc admin user add root "$AWS_ACCESS_KEY_ID" "$AWS_SECRET_ACCESS_KEY"
# `policy attach` fails when the policy is already attached (minio/mc#4670): that case is success.
if ! out=$(mc admin policy attach root "$POLICY" --user "$AWS_ACCESS_KEY_ID" 2>&1); then
  case "$out" in
    *"already in effect"*) echo "policy $POLICY already attached to $AWS_ACCESS_KEY_ID" ;;
    *) echo "$out" >&2; exit 1 ;;
  esac
fi
echo "bucket $BUCKET: user $AWS_ACCESS_KEY_ID has policy $POLICY"
