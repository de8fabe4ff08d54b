import { defineConfig } from "vitest/config";

const integrationUrl = process.env.TEST_DATABASE_URL;

export default defineConfig({
  test: {
    // Says which suites this machine cannot run, and why (no Chromium, python3 or Go; no PostgreSQL).
    globalSetup: ["test/support/print-skips.ts"],
    projects: [
      {
        test: {
          name: "unit",
          include: [
            "app/**/*.test.ts",
            "lib/**/*.test.ts",
            "scripts/**/*.test.ts",
            "docs/**/*.test.ts",
            "test/e2e/**/*.test.ts",
            "test/browser/**/*.test.ts",
          ],
          // Generous: an embedded database takes seconds to start on a busy 2-core machine.
          testTimeout: 60_000,
          hookTimeout: 120_000,
        },
      },
      // The integration suites need a real PostgreSQL; CI points them at one.
      ...(integrationUrl
        ? [
            {
              test: {
                name: "integration",
                include: ["test/integration/**/*.test.ts"],
                testTimeout: 120_000,
                hookTimeout: 60_000,
              },
            },
          ]
        : []),
    ],
  },
});
