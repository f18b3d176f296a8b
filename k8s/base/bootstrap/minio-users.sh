#!/bin/sh
# The bootstrap Job's first step (image minio/mc), as MinIO's root: the bucket and two bucket users,
# each with a policy of its own.
# - The Ray pods' user (storage.env, policy $POLICY): s3://$BUCKET, except MLflow's artifacts: an
#   explicit Deny on s3://$BUCKET/mlflow-artifacts (a Deny wins over any Allow), so trial code cannot
#   overwrite or delete a run's artifacts or a registered model behind MLflow's auth. Ray pods read and
#   write artifacts through MLflow's HTTP proxy (--serve-artifacts), never in S3.
# - The MLflow server's user (mlflow-storage.env, policy $MLFLOW_POLICY): s3://$BUCKET/mlflow-artifacts/
#   only (listing restricted to that prefix by an s3:prefix condition), where --artifacts-destination
#   (mlflow.yaml) points.
# The manifest check (tools/k8s_check/storage.py) reads the put_policy "$POLICY" call below and requires
# that Deny on mlflow.yaml's artifacts destination. Every step may run again: the bucket and policies are
# kept or updated, each user's secret key is reset to its file's (so rotating one is: edit the .env file,
# re-apply, re-run this Job). Shell builtins only besides mc (the mc image has no grep).
set -eu
if [ "$AWS_ACCESS_KEY_ID" = "$MLFLOW_ACCESS_KEY_ID" ]; then
  echo "storage.env and mlflow-storage.env name the same MinIO user $AWS_ACCESS_KEY_ID: give each its own" >&2
  exit 1
fi
# MinIO's root login reaches mc through its environment (MC_HOST_<alias>), not `mc alias set`, which would write
# it into mc's config file on the pod's disk (an emptyDir on the node). It goes into a URL there, unencoded: only
# characters a URL's user-info takes as they are.
case "$MINIO_ROOT_USER$MINIO_ROOT_PASSWORD" in
  *[!A-Za-z0-9._~-]*)
    echo "minio.env: MINIO_ROOT_USER and MINIO_ROOT_PASSWORD may hold only letters, digits and . _ ~ - (they go into a URL for mc; e.g. openssl rand -hex 24)" >&2
    exit 1 ;;
esac
export MC_HOST_root="${S3_ENDPOINT%%://*}://$MINIO_ROOT_USER:$MINIO_ROOT_PASSWORD@${S3_ENDPOINT#*://}"
tries=${MINIO_WAIT_TRIES:-60}  # 5 s apart: 5 minutes, then the Job fails with mc's last error (and is retried)
until error=$(mc ls root 2>&1 >/dev/null); do
  tries=$((tries - 1))
  if [ "$tries" -le 0 ]; then
    echo "MinIO at $S3_ENDPOINT did not answer with the root login of minio.env: $error" >&2
    exit 1
  fi
  echo "waiting for MinIO at $S3_ENDPOINT"; sleep 5
done
mc mb --ignore-existing "root/$BUCKET"

# put_policy NAME STATEMENT...: create the policy NAME of these statements (JSON objects), or update it.
put_policy() {
  name=$1; shift
  doc='{"Version": "2012-10-17", "Statement": ['
  sep=''
  for statement in "$@"; do doc="$doc$sep$statement"; sep=', '; done
  file="${TMPDIR:-/tmp}/policy-$name.json"
  printf '%s]}\n' "$doc" > "$file"
  mc admin policy create root "$name" "$file"
}

# user_with_policy ACCESS_KEY SECRET_KEY POLICY: create the user (or reset its secret key) and attach POLICY.
# The secret key goes to mc on its standard input (mc reads it from there when the command line names only the
# access key), not on its command line, which every process of the pod and the node's root can read.
user_with_policy() {
  printf '%s\n' "$2" | mc admin user add root "$1"
  # `policy attach` fails when the policy is already attached (minio/mc#4670): that case is success.
  if ! out=$(mc admin policy attach root "$3" --user "$1" 2>&1); then
    case "$out" in
      *"already in effect"*) echo "policy $3 already attached to $1" ;;
      *) echo "$out" >&2; exit 1 ;;
    esac
  fi
  echo "bucket $BUCKET: user $1 has policy $3"
}

put_policy "$POLICY" \
  "{\"Effect\": \"Allow\", \"Action\": [\"s3:GetBucketLocation\", \"s3:ListBucket\", \"s3:ListBucketMultipartUploads\"], \"Resource\": [\"arn:aws:s3:::$BUCKET\"]}" \
  "{\"Effect\": \"Allow\", \"Action\": [\"s3:GetObject\", \"s3:PutObject\", \"s3:DeleteObject\", \"s3:AbortMultipartUpload\", \"s3:ListMultipartUploadParts\"], \"Resource\": [\"arn:aws:s3:::$BUCKET/*\"]}" \
  "{\"Effect\": \"Deny\", \"Action\": [\"s3:*\"], \"Resource\": [\"arn:aws:s3:::$BUCKET/mlflow-artifacts\", \"arn:aws:s3:::$BUCKET/mlflow-artifacts/*\"]}" \
  "{\"Effect\": \"Deny\", \"Action\": [\"s3:ListBucket\"], \"Resource\": [\"arn:aws:s3:::$BUCKET\"], \"Condition\": {\"StringLike\": {\"s3:prefix\": [\"mlflow-artifacts\", \"mlflow-artifacts/*\"]}}}"
user_with_policy "$AWS_ACCESS_KEY_ID" "$AWS_SECRET_ACCESS_KEY" "$POLICY"

put_policy "$MLFLOW_POLICY" \
  "{\"Effect\": \"Allow\", \"Action\": [\"s3:GetBucketLocation\"], \"Resource\": [\"arn:aws:s3:::$BUCKET\"]}" \
  "{\"Effect\": \"Allow\", \"Action\": [\"s3:ListBucket\"], \"Resource\": [\"arn:aws:s3:::$BUCKET\"], \"Condition\": {\"StringLike\": {\"s3:prefix\": [\"mlflow-artifacts\", \"mlflow-artifacts/*\"]}}}" \
  "{\"Effect\": \"Allow\", \"Action\": [\"s3:GetObject\", \"s3:PutObject\", \"s3:DeleteObject\", \"s3:AbortMultipartUpload\", \"s3:ListMultipartUploadParts\"], \"Resource\": [\"arn:aws:s3:::$BUCKET/mlflow-artifacts/*\"]}"
user_with_policy "$MLFLOW_ACCESS_KEY_ID" "$MLFLOW_SECRET_ACCESS_KEY" "$MLFLOW_POLICY"
