# The service image: every role (`all`, `web`, `worker`) and every operator command run from it,
# as the unprivileged `deno` user, offline (everything is installed and compiled at build time;
# `--cached-only` makes a missing module an error instead of a download).
# Build: docker build -t settlement .
# Run:   docker run -e DATABASE_URL=... -e JWT_SECRET=... settlement [all|web|worker]
# compose.yaml runs PostgreSQL, two web replicas and a worker from it (README, Docker Compose).
# Plain Dockerfile syntax: builds with BuildKit and with the legacy builder alike.
ARG DENO_VERSION=2.9.6

# Build stage: the runtime dependency set and the compiled sources.
FROM denoland/deno:${DENO_VERSION} AS build
WORKDIR /app
# Dependencies first: rebuilt only when deno.json, deno.lock or the image's import set change.
COPY deno.json deno.lock ./
COPY scripts/image-config.ts scripts/
# Only what src/ loads at run time (no embedded PostgreSQL, solc, test or bench packages), the
# lockfile pruned to it and checked against the project's. npm tarballs keep their own file
# modes (some are readable by owner only): the `deno` user must read all of it. Type
# declarations and source maps are never read at run time.
RUN deno run --allow-read=. --allow-write=. scripts/image-config.ts prepare \
    && deno install --quiet \
    && deno run --allow-read=. --allow-write=. scripts/image-config.ts verify \
    && find node_modules/.deno \( -name '*.map' -o -name '*.d.ts' -o -name '*.d.mts' \
         -o -name '*.d.cts' \) -type f -delete \
    && chmod -R a+rX,go-w node_modules
COPY src src
COPY views views
COPY migrations migrations
COPY scripts/healthcheck.ts scripts/
# Compile every entry point once (the signature-check workers are entry points: they are loaded
# by URL); a module that needs anything not installed fails here.
RUN deno cache src/main.ts src/cli/*.ts src/chain/authorization-check.worker.ts \
      src/chain/recovery-lane.worker.ts scripts/healthcheck.ts \
    && chmod -R a+rX /deno-dir/gen \
    && rm scripts/image-config.ts

# Run stage: the same base, the application and its compiled cache; no npm download cache.
FROM denoland/deno:${DENO_VERSION}
WORKDIR /app
COPY --from=build /app /app
COPY --from=build /deno-dir/gen /deno-dir/gen
# DATA_DIR is the only place the `deno` user writes (local chain state in development; the
# compose chain volumes mount at .data/chain and take this ownership).
RUN install -d -o deno -g deno /app/.data /app/.data/chain

ENV APP_ENV=production \
    PORT=3000 \
    HOST=0.0.0.0 \
    DATA_DIR=/app/.data \
    DENO_NO_UPDATE_CHECK=1 \
    DENO_NO_PROMPT=1 \
    # Fewer glibc malloc arenas: memory returns to its baseline after bursts of large bodies.
    MALLOC_ARENA_MAX=2
EXPOSE 3000
# Never root: the image's unprivileged deno user (uid 1993) owns only DATA_DIR.
USER deno
HEALTHCHECK --interval=10s --timeout=5s --start-period=30s --retries=3 \
  CMD ["deno", "run", "--cached-only", "--allow-net=127.0.0.1", "--allow-env=PORT", "scripts/healthcheck.ts"]
# tini (from the base image) as PID 1: signals reach deno, and exited children are reaped.
# The role is the argument: all (default), web or worker.
ENTRYPOINT ["/tini", "--", "deno", "run", "--cached-only", "--allow-all", "src/main.ts"]
CMD ["all"]
