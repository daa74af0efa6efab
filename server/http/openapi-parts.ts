// Pieces of the OpenAPI document that the routes built from procedures and the hand-written routes share.

/** A failure answer: the error envelope (README, "API overview"). */
export const errorResponse = (description: string) => ({
  description,
  content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } },
});

/** The schema of a success answer: the envelope around `data`. */
export const envelopeOf = (data: object) => ({
  type: 'object',
  required: ['code', 'data'],
  properties: { code: { type: 'string', const: '0' }, data },
});
