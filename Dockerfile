# emqd container image (untested here: the machines this was written on have
# no Docker engine). Build and run:
#
#   docker build -t emqd .
#   docker run -p 6379:6379 -v emqd-data:/data emqd
#   docker run -p 6379:6379 -v emqd-data:/data emqd --dir /data --bind 0.0.0.0 --requirepass s3cret
#
# Arguments after the image name replace the default ones below, so repeat
# --dir /data --bind 0.0.0.0 when adding options (a config file, as with
# valkey-server, comes first: emqd /etc/emqd/emqd.conf --dir /data ...).
# Protected mode is on: without --requirepass, clients from outside the
# container (every client through -p) get Valkey's DENIED reply; on a
# private network add --protected-mode no (docs/operations.md §9).

# --- build: a static binary -------------------------------------------------
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 GOOS=linux go build -trimpath -ldflags="-s -w" -o /out/emqd ./cmd/emqd \
 && mkdir -p /out/data

# --- runtime: no shell, no package manager, non-root ------------------------
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/emqd /usr/local/bin/emqd
# The volume's mount point is owned by the nonroot user (uid 65532), so a new
# named volume starts writable for it.
COPY --from=build --chown=65532:65532 /out/data /data
USER 65532:65532
WORKDIR /data
VOLUME /data
EXPOSE 6379
ENTRYPOINT ["/usr/local/bin/emqd"]
CMD ["--dir", "/data", "--bind", "0.0.0.0"]
