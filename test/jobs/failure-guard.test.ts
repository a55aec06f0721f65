import { describe, expect, it } from 'vitest';
import { FailureGuard } from '../../src/actions/kit/guard.js';
import { ApiError, NetworkError } from '../../src/api/errors.js';

describe('the failure guard of a job', () => {
  it('a fatal failure stops at once, a retryable one after max in a row, a definite one never', () => {
    const g = new FailureGuard('job', 'default', 2);
    const e404 = new ApiError('addContact', 404, 'x is not on the messenger', { code: 'NOT_ON_MESSENGER' });
    const net = new NetworkError('addContact', 'ECONNRESET', true);
    expect(g.fail(e404, '')).toBe('definite');
    expect(g.fail(net, '')).toBe('retryable');
    g.ok();
    expect(g.fail(net, '')).toBe('retryable');
    expect(() => g.fail(net, 'kept')).toThrow(/2 calls in a row failed .* kept/);
    const e401 = new ApiError('addContact', 401, 'Unauthorized', { code: 'UNAUTHORIZED' });
    expect(() => new FailureGuard('job', 'default', 5).fail(e401, '')).toThrow(
      /job stopped: the service refused the token of instance 'default'/,
    );
  });
});
