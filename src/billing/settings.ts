import { z } from 'zod';

/** The payment provider's settings; absent (self-hosted) when STRIPE_SECRET_KEY is unset. */
export interface BillingSettings {
  secretKey: string;
  /** The Stripe-compatible API's base URL (a local stripe-mock in tests). */
  apiUrl: URL;
  /** Signs the provider's webhooks; without it every webhook is refused. */
  webhookSecret: string | undefined;
  /** Bound on each call to the provider. */
  timeoutMs: number;
  /** How old a webhook's signed timestamp may be (Stripe's replay window). */
  webhookToleranceSeconds: number;
}

const schema = z.object({
  STRIPE_SECRET_KEY: z.string().optional(),
  STRIPE_API_URL: z
    .string()
    .url()
    .refine((u) => /^https?:\/\//.test(u), 'must be an http(s) URL')
    .default('https://api.stripe.com'),
  STRIPE_WEBHOOK_SECRET: z.string().optional(),
  STRIPE_TIMEOUT_MS: z.coerce.number().int().min(100).max(120_000).default(10_000),
  STRIPE_WEBHOOK_TOLERANCE_SECONDS: z.coerce.number().int().min(1).max(3600).default(300),
});

/** Reads the billing settings from the environment: none without STRIPE_SECRET_KEY, or the problems. */
export function loadBillingSettings(
  env: Record<string, string | undefined>,
): { settings: BillingSettings | undefined } | { problems: string[] } {
  const cleaned = Object.fromEntries(Object.entries(env).filter(([k, v]) => k.startsWith('STRIPE_') && v));
  const parsed = schema.safeParse(cleaned);
  if (!parsed.success) return { problems: parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`) };
  const e = parsed.data;
  if (!e.STRIPE_SECRET_KEY) return { settings: undefined };
  const settings: BillingSettings = {
    secretKey: e.STRIPE_SECRET_KEY,
    apiUrl: new URL(e.STRIPE_API_URL),
    webhookSecret: e.STRIPE_WEBHOOK_SECRET,
    timeoutMs: e.STRIPE_TIMEOUT_MS,
    webhookToleranceSeconds: e.STRIPE_WEBHOOK_TOLERANCE_SECONDS,
  };
  return { settings };
}
