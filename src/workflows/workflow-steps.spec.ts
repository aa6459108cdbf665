import {
  checkSteps,
  durationMs,
  STEP_LIMITS,
  StepTree,
  waitOf,
  WorkflowStep,
} from './workflow-steps';

const TEMPLATE = '0190a8a0-1111-7000-8000-00000000000a';
const CONDITION = {
  logic: 'AND',
  conditions: [{ field: 'data.plan', operator: 'equals', value: 'pro' }],
};

/** The problems of a steps tree, as `field code` strings. */
function problems(input: unknown, previous: WorkflowStep[] = []): string[] {
  return checkSteps(input, previous).errors.map((e) => `${e.field} ${e.code}`);
}

/** `depth` CONDITION steps inside one another, the innermost holding `inner` in its then branch. */
function nested(depth: number, inner: unknown[] = [{ type: 'EXIT' }]): unknown[] {
  let steps: unknown[] = inner;
  for (let i = 0; i < depth; i++)
    steps = [{ type: 'CONDITION', condition: CONDITION, then: steps, else: [] }];
  return steps;
}

describe('checkSteps', () => {
  describe('the steps list', () => {
    it('must be an array of objects with a known type', () => {
      expect(problems(undefined)).toEqual(['steps required']);
      expect(problems({})).toEqual(['steps invalid_type']);
      expect(problems([])).toEqual([]);
      expect(problems(['x', null])).toEqual(['steps[0] invalid_type', 'steps[1] invalid_type']);
      expect(problems([{}])).toEqual(['steps[0].type required']);
      expect(problems([{ type: 'SLEEP' }])).toEqual(['steps[0].type invalid_enum_value']);
    });

    it('refuses fields a type does not have', () => {
      expect(problems([{ type: 'EXIT', templateId: TEMPLATE }])).toEqual([
        'steps[0] unrecognized_keys',
      ]);
      expect(checkSteps([{ type: 'EXIT', url: 'x' }]).errors[0].message).toContain('url');
    });

    it(`holds at most ${STEP_LIMITS.maxSteps} steps, branches included`, () => {
      const exits = (n: number) => Array.from({ length: n }, () => ({ type: 'EXIT' }));
      expect(problems(exits(STEP_LIMITS.maxSteps))).toEqual([]);
      expect(problems(exits(STEP_LIMITS.maxSteps + 1))).toEqual(['steps too_big']);
      // 99 at the top and 2 in a branch: 102 in all, one problem however far past the limit.
      const branching = [
        ...exits(STEP_LIMITS.maxSteps - 1),
        { type: 'CONDITION', condition: CONDITION, then: exits(1), else: [] },
      ];
      expect(problems(branching)).toEqual(['steps too_big']);
    });

    it(`nests branches at most ${STEP_LIMITS.maxDepth} deep`, () => {
      expect(problems(nested(STEP_LIMITS.maxDepth))).toEqual([]);
      // The eleventh branching step has no place for either of its branches.
      const deepest = `steps${'[0].then'.repeat(STEP_LIMITS.maxDepth)}[0]`;
      expect(problems(nested(STEP_LIMITS.maxDepth + 1))).toEqual([
        `${deepest}.then too_big`,
        `${deepest}.else too_big`,
      ]);
      // Empty branches there are refused too: the step itself nests too deep.
      expect(problems(nested(STEP_LIMITS.maxDepth + 1, []))).toEqual([
        `${deepest}.then too_big`,
        `${deepest}.else too_big`,
      ]);
    });

    it('answers the path of a problem inside branches', () => {
      const steps = [
        { type: 'EXIT' },
        { type: 'DELAY', amount: 1, unit: 'hours' },
        {
          type: 'CONDITION',
          condition: CONDITION,
          then: [{ type: 'SEND_EMAIL', templateId: 'nope' }],
          else: [
            {
              type: 'WAIT_FOR_EVENT',
              event: 'x',
              timeout: { amount: 1, unit: 'days' },
              else: [{ type: 'DELAY' }],
            },
          ],
        },
      ];
      expect(problems(steps)).toEqual([
        'steps[2].then[0].templateId invalid_string',
        'steps[2].else[0].else[0].amount required',
        'steps[2].else[0].else[0].unit required',
      ]);
    });
  });

  describe('ids', () => {
    it('keeps given ids and generates the missing ones', () => {
      const { steps, errors } = checkSteps([{ id: 'first', type: 'EXIT' }, { type: 'EXIT' }]);
      expect(errors).toEqual([]);
      expect(steps[0].id).toBe('first');
      expect(steps[1].id).toMatch(/^s_[A-Za-z0-9_-]{8}$/);
    });

    it('are 1..64 of A-Z a-z 0-9 _ -, and unique across branches', () => {
      expect(problems([{ id: 'a'.repeat(64), type: 'EXIT' }])).toEqual([]);
      for (const id of ['', 'a'.repeat(65), 'has space', 'dot.ted', 7]) {
        expect(problems([{ id, type: 'EXIT' }])).toEqual(['steps[0].id invalid_string']);
      }
      expect(
        problems([
          { id: 'x', type: 'EXIT' },
          { id: 'x', type: 'EXIT' },
        ]),
      ).toEqual(['steps[1].id custom']);
      expect(
        problems([
          {
            id: 'x',
            type: 'CONDITION',
            condition: CONDITION,
            then: [{ id: 'x', type: 'EXIT' }],
            else: [],
          },
        ]),
      ).toEqual(['steps[0].then[0].id custom']);
    });

    it('stay stable across edits: a step sent without an id takes the stored id at its place when the type matches', () => {
      const stored = checkSteps([
        { id: 'wait', type: 'DELAY', amount: 1, unit: 'days' },
        {
          id: 'branch',
          type: 'CONDITION',
          condition: CONDITION,
          then: [{ id: 'inner', type: 'EXIT' }],
          else: [],
        },
      ]).steps;
      const resent = checkSteps(
        [
          { type: 'DELAY', amount: 2, unit: 'days' },
          { type: 'CONDITION', condition: CONDITION, then: [{ type: 'EXIT' }], else: [] },
        ],
        stored,
      ).steps;
      expect(new StepTree(resent).ids()).toEqual(['wait', 'branch', 'inner']);
      // Another type at that place, or the stored id named elsewhere in the request: a new id.
      const changed = checkSteps(
        [{ type: 'EXIT' }, { id: 'wait', type: 'DELAY', amount: 1, unit: 'days' }],
        stored,
      ).steps;
      expect(changed[0].id).not.toBe('wait');
      expect(changed[1].id).toBe('wait');
    });
  });

  describe('SEND_EMAIL', () => {
    it('needs a template id, lowercased and handed back for the service to check', () => {
      const check = checkSteps([{ type: 'SEND_EMAIL', templateId: TEMPLATE.toUpperCase() }]);
      expect(check.errors).toEqual([]);
      expect(check.steps[0]).toMatchObject({ type: 'SEND_EMAIL', templateId: TEMPLATE });
      expect(check.refs.templates).toEqual([{ path: 'steps[0].templateId', templateId: TEMPLATE }]);
      expect(problems([{ type: 'SEND_EMAIL' }])).toEqual(['steps[0].templateId required']);
      expect(problems([{ type: 'SEND_EMAIL', templateId: 'welcome' }])).toEqual([
        'steps[0].templateId invalid_string',
      ]);
    });
  });

  describe('DELAY and WAIT_FOR_EVENT durations', () => {
    it('are a positive integer amount of seconds, minutes, hours or days, at most 365 days', () => {
      expect(problems([{ type: 'DELAY', amount: 365, unit: 'days' }])).toEqual([]);
      expect(problems([{ type: 'DELAY', amount: 366, unit: 'days' }])).toEqual([
        'steps[0].amount too_big',
      ]);
      expect(problems([{ type: 'DELAY', amount: 0, unit: 'hours' }])).toEqual([
        'steps[0].amount invalid_type',
      ]);
      expect(problems([{ type: 'DELAY', amount: 1.5, unit: 'hours' }])).toEqual([
        'steps[0].amount invalid_type',
      ]);
      expect(problems([{ type: 'DELAY', amount: 1, unit: 'weeks' }])).toEqual([
        'steps[0].unit invalid_enum_value',
      ]);
      expect(durationMs({ amount: 2, unit: 'minutes' })).toBe(120_000);
    });

    it('WAIT_FOR_EVENT: an event name, a timeout object, optional branches', () => {
      const ok = checkSteps([
        { type: 'WAIT_FOR_EVENT', event: 'paid', timeout: { amount: 3, unit: 'days' } },
      ]);
      expect(ok.errors).toEqual([]);
      expect(ok.steps[0]).toMatchObject({
        event: 'paid',
        timeout: { amount: 3, unit: 'days' },
        then: [],
        else: [],
      });
      expect(waitOf(ok.steps[0])).toEqual({ durationMs: 3 * 86_400_000, event: 'paid' });
      expect(problems([{ type: 'WAIT_FOR_EVENT', timeout: { amount: 1, unit: 'days' } }])).toEqual([
        'steps[0].event required',
      ]);
      for (const event of [' padded', 'line\nbreak', 'x'.repeat(101)]) {
        expect(
          problems([{ type: 'WAIT_FOR_EVENT', event, timeout: { amount: 1, unit: 'days' } }]),
        ).toEqual(['steps[0].event invalid_string']);
      }
      expect(problems([{ type: 'WAIT_FOR_EVENT', event: 'paid' }])).toEqual([
        'steps[0].timeout required',
      ]);
      expect(
        problems([
          { type: 'WAIT_FOR_EVENT', event: 'paid', timeout: { amount: 1, unit: 'days', at: 1 } },
        ]),
      ).toEqual(['steps[0].timeout unrecognized_keys']);
      expect(
        problems([
          { type: 'WAIT_FOR_EVENT', event: 'paid', timeout: { amount: 1, unit: 'days' }, then: {} },
        ]),
      ).toEqual(['steps[0].then invalid_type']);
    });
  });

  describe('CONDITION', () => {
    it('needs a condition (handed back for the service) and both branches', () => {
      const ok = checkSteps([{ type: 'CONDITION', condition: CONDITION, then: [], else: [] }]);
      expect(ok.errors).toEqual([]);
      expect(ok.refs.conditions).toEqual([{ path: 'steps[0].condition', condition: CONDITION }]);
      expect(problems([{ type: 'CONDITION', then: [], else: [] }])).toEqual([
        'steps[0].condition required',
      ]);
      expect(problems([{ type: 'CONDITION', condition: CONDITION }])).toEqual([
        'steps[0].then required',
        'steps[0].else required',
      ]);
    });
  });

  describe('UPDATE_CONTACT', () => {
    it('needs data (an object within the size limit) or subscribed (a boolean)', () => {
      expect(problems([{ type: 'UPDATE_CONTACT', data: { plan: 'pro' } }])).toEqual([]);
      expect(problems([{ type: 'UPDATE_CONTACT', subscribed: false }])).toEqual([]);
      expect(problems([{ type: 'UPDATE_CONTACT' }])).toEqual(['steps[0] required']);
      expect(problems([{ type: 'UPDATE_CONTACT', data: [1] }])).toEqual([
        'steps[0].data invalid_type',
      ]);
      expect(problems([{ type: 'UPDATE_CONTACT', subscribed: 'no' }])).toEqual([
        'steps[0].subscribed invalid_type',
      ]);
      expect(
        problems([
          { type: 'UPDATE_CONTACT', data: { big: 'x'.repeat(STEP_LIMITS.maxValueBytes) } },
        ]),
      ).toEqual(['steps[0].data too_big']);
    });
  });

  describe('WEBHOOK', () => {
    const hook = (fields: Record<string, unknown>) => [
      { type: 'WEBHOOK', url: 'https://hooks.example.org/x', ...fields },
    ];

    it('needs an http(s) URL; method defaults to POST', () => {
      const ok = checkSteps(hook({}));
      expect(ok.errors).toEqual([]);
      expect(ok.steps[0]).toMatchObject({ url: 'https://hooks.example.org/x', method: 'POST' });
      expect(problems([{ type: 'WEBHOOK' }])).toEqual(['steps[0].url required']);
      for (const url of ['ftp://x.org/', 'not a url', `https://x.org/${'a'.repeat(2048)}`]) {
        expect(problems(hook({ url }))).toEqual(['steps[0].url invalid_string']);
      }
      expect(problems(hook({ method: 'DELETE' }))).toEqual(['steps[0].method invalid_enum_value']);
    });

    it('headers: allowed names, single-line values, at most 50; their values are Liquid to parse', () => {
      const ok = checkSteps(hook({ headers: { 'x-plan': '{{ plan }}' } }));
      expect(ok.refs.liquid).toEqual([{ path: 'steps[0].headers.x-plan', source: '{{ plan }}' }]);
      expect(problems(hook({ headers: { Host: 'evil' } }))).toEqual([
        'steps[0].headers.Host invalid_string',
      ]);
      expect(problems(hook({ headers: { 'bad name': 'x' } }))).toEqual([
        'steps[0].headers.bad name invalid_string',
      ]);
      expect(problems(hook({ headers: { 'x-a': 'line\nbreak' } }))).toEqual([
        'steps[0].headers.x-a invalid_string',
      ]);
      expect(problems(hook({ headers: { 'x-a': 1 } }))).toEqual([
        'steps[0].headers.x-a invalid_string',
      ]);
      expect(problems(hook({ headers: ['x'] }))).toEqual(['steps[0].headers invalid_type']);
      const many = Object.fromEntries(
        Array.from({ length: STEP_LIMITS.maxHeaders + 1 }, (_, i) => [`x-${i}`, 'v']),
      );
      expect(problems(hook({ headers: many }))).toEqual(['steps[0].headers too_big']);
    });

    it('body: a string of Liquid within the size limit, not on GET', () => {
      const ok = checkSteps(hook({ body: '{"plan":"{{ plan }}"}' }));
      expect(ok.refs.liquid).toEqual([{ path: 'steps[0].body', source: '{"plan":"{{ plan }}"}' }]);
      expect(problems(hook({ body: { plan: 1 } }))).toEqual(['steps[0].body invalid_type']);
      expect(problems(hook({ body: 'x'.repeat(STEP_LIMITS.maxValueBytes + 1) }))).toEqual([
        'steps[0].body too_big',
      ]);
      expect(problems(hook({ method: 'GET', body: 'x' }))).toEqual(['steps[0].body custom']);
    });
  });
});

describe('StepTree', () => {
  const steps = checkSteps([
    { id: 'a', type: 'EXIT' },
    {
      id: 'b',
      type: 'CONDITION',
      condition: CONDITION,
      then: [
        { id: 'b1', type: 'EXIT' },
        { id: 'b2', type: 'EXIT' },
      ],
      else: [],
    },
    { id: 'c', type: 'EXIT' },
  ]).steps;
  const tree = new StepTree(steps);

  it('goes on after a branch with the step after the branching step, and ends after the last top-level step', () => {
    expect(tree.first()).toBe('a');
    expect(tree.next('b1')).toBe('b2');
    expect(tree.next('b2')).toBe('c');
    expect(tree.next('c')).toBeNull();
    expect(tree.enter(tree.get('b') as never, 'then')).toBe('b1');
    expect(tree.enter(tree.get('b') as never, 'else')).toBe('c');
  });
});
