/**
 * The tenants' graphs: most incidents happen in one online shop (a tenant has one graph whatever
 * breaks, so the services around the failure are there to be blamed), some in a smaller graph.
 */
import type { CorpusWorld, NodeSpec, RunbookSpec } from './types.js';

const n = (name: string, type: NodeSpec['type'], criticality: number, team: string): NodeSpec => ({
  name,
  type,
  criticality,
  team,
});

/** The online shop every `shop()` world starts from. */
const shopNodes: NodeSpec[] = [
  n('web-frontend', 'api', 9, 'storefront'),
  n('api-gateway', 'api', 10, 'platform'),
  n('checkout-api', 'api', 10, 'payments'),
  n('payments-api', 'api', 10, 'payments'),
  n('payments-db', 'database', 10, 'payments'),
  n('cart-api', 'api', 8, 'storefront'),
  n('session-cache', 'cache', 8, 'storefront'),
  n('catalog-api', 'api', 8, 'catalog'),
  n('catalog-db', 'database', 8, 'catalog'),
  n('product-cache', 'cache', 7, 'catalog'),
  n('search-api', 'api', 7, 'search'),
  n('search-index', 'database', 7, 'search'),
  n('inventory-api', 'api', 8, 'fulfilment'),
  n('inventory-db', 'database', 8, 'fulfilment'),
  n('orders-db', 'database', 10, 'payments'),
  n('order-worker', 'worker', 8, 'fulfilment'),
  n('orders-queue', 'queue', 8, 'fulfilment'),
  n('accounts-api', 'api', 9, 'identity'),
  n('accounts-db', 'database', 9, 'identity'),
  n('notifications-worker', 'worker', 5, 'messaging'),
  n('notifications-queue', 'queue', 5, 'messaging'),
  n('reporting-worker', 'worker', 3, 'data'),
  n('recommendations-api', 'api', 5, 'discovery'),
];

const shopEdges: Array<[string, string]> = [
  ['web-frontend', 'api-gateway'],
  ['api-gateway', 'checkout-api'],
  ['api-gateway', 'cart-api'],
  ['api-gateway', 'catalog-api'],
  ['api-gateway', 'search-api'],
  ['api-gateway', 'accounts-api'],
  ['api-gateway', 'recommendations-api'],
  ['checkout-api', 'payments-api'],
  ['checkout-api', 'cart-api'],
  ['checkout-api', 'inventory-api'],
  ['checkout-api', 'orders-db'],
  ['checkout-api', 'orders-queue'],
  ['payments-api', 'payments-db'],
  ['cart-api', 'session-cache'],
  ['catalog-api', 'catalog-db'],
  ['catalog-api', 'product-cache'],
  ['search-api', 'search-index'],
  ['inventory-api', 'inventory-db'],
  ['order-worker', 'orders-queue'],
  ['order-worker', 'orders-db'],
  ['order-worker', 'notifications-queue'],
  ['notifications-worker', 'notifications-queue'],
  ['accounts-api', 'accounts-db'],
  ['reporting-worker', 'orders-db'],
  ['recommendations-api', 'catalog-api'],
];

/**
 * The shop, plus what the incident adds: nodes (an added node replaces a shop node of its name,
 * e.g. to give it repositories), edges and runbooks.
 */
export function shop(
  extra: { nodes?: NodeSpec[]; edges?: Array<[string, string]>; runbooks?: RunbookSpec[] } = {},
): CorpusWorld {
  const added = new Map((extra.nodes ?? []).map((node) => [node.name, node]));
  const nodes = shopNodes.map((node) => added.get(node.name) ?? node);
  for (const node of extra.nodes ?? []) if (!shopNodes.some((s) => s.name === node.name)) nodes.push(node);
  return { nodes, edges: [...shopEdges, ...(extra.edges ?? [])], runbooks: extra.runbooks ?? [] };
}

/** A node of the shop by name, with changes (repositories, say). */
export function shopNode(name: string, change: Partial<NodeSpec>): NodeSpec {
  const node = shopNodes.find((s) => s.name === name);
  if (!node) throw new Error(`no shop node ${name}`);
  return { ...node, ...change };
}

export { n as node };
