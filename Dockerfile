# syntax=docker/dockerfile:1
# One image with all three binaries (api, worker, matchctl) in
# /usr/local/bin; the default command is the API.
#
#   docker build --build-arg VERSION=$(git describe --always --dirty) \
#     --build-arg REVISION=$(git rev-parse HEAD) -t collegematch/matching .

FROM golang:1.26.8 AS build
WORKDIR /src
ENV CGO_ENABLED=0 GOFLAGS=-buildvcs=false
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod \
    go mod download
COPY . .
ARG VERSION=dev
# The git commit, for matching_build_info (the build context has no .git).
ARG REVISION=
RUN --mount=type=cache,target=/go/pkg/mod \
    --mount=type=cache,target=/root/.cache/go-build \
    mkdir -p /out && \
    go build -trimpath \
      -ldflags "-X github.com/collegematch/matching/internal/buildinfo.Version=${VERSION} -X github.com/collegematch/matching/internal/buildinfo.Revision=${REVISION}" \
      -o /out/ ./cmd/...

# Static binaries, CA certificates and time zones; no shell. Runs as
# nonroot (uid 65532).
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/ /usr/local/bin/
USER 65532:65532
# 8080 public API; 9090 API operations port; 9091 worker operations port.
EXPOSE 8080 9090 9091
CMD ["/usr/local/bin/api"]
